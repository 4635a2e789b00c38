"""Parse compute-sanitizer's text reports into findings (no GPU needed: text in, records out).

One parser for the four tools' messages, as compute-sanitizer prints them (each line behind its
`=========` prefix):
- memcheck: `Invalid __global__ write of size 4 bytes`, then `at <function>+0x.. in <file>:<line>`
  (older releases: `at 0x.. in <file>:<line>:<function>`; without line information only the
  function), `by thread (..) in block (..)`, `Address 0x.. is out of bounds` (newer: `Access to ..`)
  and `and is N bytes after|before the nearest allocation at 0x.. of size M bytes`; also misaligned
  and out-of-range shared/local addresses, and `Program hit <error> ... on CUDA API call to <api>`.
- initcheck: `Uninitialized __global__ memory read of size N bytes` with the same location lines,
  and `Host API memory access error at host access to ..` + `Uninitialized access at .. on access by
  cudaMemcopy source` (a copy of memory no kernel wrote, such as an output copied to the host).
- racecheck: `Error|Warning: Race reported between Write access at <loc>` followed by `and Read access
  at <loc> [N hazards]` lines (analysis mode), or `Potential WAW|WAR|RAW hazard detected at __shared__
  ..` with one line per access (hazard mode).
- synccheck: `Barrier error detected. Divergent thread(s) in block|warp`, with its location lines.
Summaries (`ERROR SUMMARY: N errors`, `RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)`)
say the report is complete. Findings that repeat per thread are merged into one with a count.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

_PREFIX = re.compile(r"^\s*=+ ?")
_HEX = r"0x[0-9a-fA-F]+"
_NUM = r"[\d,]+"

_INVALID = re.compile(rf"Invalid __(\w+)__ (read|write|atomic) of size ({_NUM}) bytes?", re.I)
_MISALIGNED = re.compile(r"(Misaligned|Out-of-range) (Shared or Local )?Address", re.I)
_UNINIT = re.compile(rf"Uninitiali[sz]ed __(\w+)__ memory (read|write)? ?of size ({_NUM}) bytes?", re.I)
_HOST_API = re.compile(rf"Host API memory access error at host access to ({_HEX}) of size ({_NUM}) bytes?", re.I)
_RACE = re.compile(r"(Error|Warning): Race reported between (\w+) access at (.+)$", re.I)
_RACE_MORE = re.compile(r"and (\w+) access at (.+?)(?:\s*\[(\d[\d,]*) hazards?\])?$", re.I)
_HAZARD = re.compile(r"(ERROR|WARNING|INFO)?:?\s*Potential (WAW|WAR|RAW) hazard detected at __(\w+)__ "
                     rf"({_HEX})", re.I)
_HAZARD_ACCESS = re.compile(r"(Read|Write) Thread \(([\d, ]+)\) at (.+)$", re.I)
_BARRIER = re.compile(r"Barrier error detected\.?\s*(.*)$", re.I)
_SYNC_INVALID = re.compile(r"Invalid arguments? detected", re.I)
_API = re.compile(r"Program hit (\w+) \(error (\d+)\) due to \"(.*?)\" on CUDA API call to (\w+)", re.I)
_AT = re.compile(r"^at (.+)$")
_IN_FILE = re.compile(r"^in (\S+?):(\d+)$")
_THREAD = re.compile(r"by thread \(([\d, ]+)\) in block \(([\d, ]+)\)")
_ADDRESS = re.compile(rf"(?:Address|Access to) ({_HEX}) is (out of bounds|misaligned)", re.I)
_NEAREST = re.compile(rf"and is ({_NUM}) bytes? (after|before) the nearest allocation at ({_HEX}) of size "
                      rf"({_NUM}) bytes?", re.I)
_UNINIT_AT = re.compile(rf"Uninitiali[sz]ed access at ({_HEX}) on access by (.+?)\.?$", re.I)
_SUMMARY = re.compile(r"(ERROR|RACECHECK) SUMMARY: (\d[\d,]*) (errors?|hazards? displayed)"
                      r"(?: \((\d+) errors?, (\d+) warnings?\))?", re.I)
# location forms: "fn+0x70 in file:41", "fn+0x70", "0x70 in file:41:fn", "0x70 in fn"
_LOC_NEW_FILE = re.compile(rf"^(?P<fn>.+?)\+{_HEX}\s+in\s+(?P<file>\S+?):(?P<line>\d+)$")
_LOC_NEW = re.compile(rf"^(?P<fn>.+?)\+{_HEX}$")
_LOC_OLD_FILE = re.compile(rf"^{_HEX}\s+in\s+(?P<file>[^:\s]+):(?P<line>\d+):(?P<fn>.+)$")
_LOC_OLD = re.compile(rf"^{_HEX}\s+in\s+(?P<fn>.+)$")
_FRAME = re.compile(r"^(Saved host backtrace|Host Frame|Device Frame|\.\.\.)", re.I)


def _int(s: str | None) -> int | None:
    return int(s.replace(",", "")) if s else None


def kernel_name(function: str | None) -> str | None:
    """The bare kernel name of a demangled function: `void ns::k<float>(float*, int)` -> `k`."""
    if not function:
        return None
    f = function.strip()
    f = f.replace("(anonymous namespace)::", "").replace("<unnamed>::", "")
    depth, cut = 0, len(f)
    for i, c in enumerate(f):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "(" and depth == 0:
            cut = i
            break
    head = f[:cut]
    out, depth = [], 0
    for c in head:  # template arguments out
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif depth == 0:
            out.append(c)
    name = "".join(out).strip().split()[-1] if "".join(out).strip() else ""
    name = name.split("::")[-1].lstrip("*&")
    return name or None


@dataclass
class Location:
    """Where an access happened: the function as printed, its bare kernel name, file and line."""

    function: str | None = None
    kernel: str | None = None
    file: str | None = None
    line: int | None = None

    @classmethod
    def parse(cls, text: str) -> "Location":
        t = text.strip()
        for pattern in (_LOC_NEW_FILE, _LOC_OLD_FILE, _LOC_NEW, _LOC_OLD):
            m = pattern.match(t)
            if m:
                d = m.groupdict()
                return cls(d["fn"].strip(), kernel_name(d["fn"]), d.get("file"), _int(d.get("line")))
        return cls(t, kernel_name(t))


@dataclass
class Finding:
    """One kind of fault at one place (merged over the threads that hit it)."""

    tool: str            # memcheck | initcheck | racecheck | synccheck
    kind: str            # invalid_read | invalid_write | invalid_atomic | misaligned | uninitialised_read |
                         # uninitialised_copy | race | barrier_error | api_error
    message: str
    space: str | None = None      # global | shared | local
    size: int | None = None       # bytes of the access
    kernel: str | None = None
    function: str | None = None
    file: str | None = None
    line: int | None = None
    thread: str | None = None
    block: str | None = None
    oob_bytes: int | None = None  # bytes past (or before) the nearest allocation
    oob_side: str | None = None   # after | before
    allocation_size: int | None = None
    severity: str = "error"
    accesses: list[dict] = field(default_factory=list)  # race: [{access, kernel, file, line, hazards}]
    count: int = 1

    def at(self, loc: Location) -> None:
        self.function, self.kernel, self.file, self.line = loc.function, loc.kernel, loc.file, loc.line

    def key(self) -> tuple:
        acc = tuple((a["access"], a.get("file"), a.get("line")) for a in self.accesses)
        return (self.tool, self.kind, self.space, self.size, self.kernel, self.file, self.line, acc)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Report:
    """A parsed log: the findings, and the summaries that say the run reached its end."""

    tool: str
    findings: list[Finding] = field(default_factory=list)
    errors: int | None = None     # from the summary line(s), summed over processes
    complete: bool = False        # a summary line was printed

    def to_dict(self) -> dict:
        return {"tool": self.tool, "errors": self.errors, "complete": self.complete,
                "findings": [f.to_dict() for f in self.findings]}


def _header(line: str, tool: str) -> Finding | None:
    """A finding opened by this line, or None."""
    m = _INVALID.search(line)
    if m:
        access = m.group(2).lower()
        return Finding(tool, f"invalid_{access}", line, m.group(1).lower(), _int(m.group(3)))
    m = _UNINIT.search(line)
    if m:
        return Finding(tool, "uninitialised_read", line, m.group(1).lower(), _int(m.group(3)))
    m = _HOST_API.search(line)
    if m:
        return Finding(tool, "uninitialised_copy" if tool == "initcheck" else "host_access", line,
                       "global", _int(m.group(2)))
    m = _MISALIGNED.search(line)
    if m:
        return Finding(tool, "misaligned" if m.group(1).lower() == "misaligned" else "out_of_range", line)
    m = _RACE.search(line)
    if m:
        f = Finding(tool, "race", line, "shared", severity=m.group(1).lower())
        first, *more = re.split(r"\s+(?=and \w+ access at )", m.group(3))
        loc = Location.parse(first)
        f.at(loc)
        f.accesses.append({"access": m.group(2).lower(), "kernel": loc.kernel, "file": loc.file,
                           "line": loc.line, "hazards": None})
        for rest in more:  # both accesses on one line
            _detail(f, rest, {})
        return f
    m = _HAZARD.search(line)
    if m:
        sev = (m.group(1) or "error").lower()
        return Finding(tool, "race", line, m.group(3).lower(), severity="error" if sev == "error" else sev)
    m = _BARRIER.search(line)
    if m:
        return Finding(tool, "barrier_error", line)
    if _SYNC_INVALID.search(line) and tool == "synccheck":
        return Finding(tool, "barrier_error", line)
    m = _API.search(line)
    if m:
        return Finding(tool, "api_error", line, severity="error")
    return None


def _detail(f: Finding, line: str, state: dict) -> None:
    """Fold a detail line into the open finding."""
    wrapped = state.pop("wrapped", False)
    m = _RACE_MORE.match(line)
    if f.kind == "race" and m and not line.lower().startswith("and is"):
        loc = Location.parse(m.group(2))
        f.accesses.append({"access": m.group(1).lower(), "kernel": loc.kernel, "file": loc.file,
                           "line": loc.line, "hazards": _int(m.group(3))})
        return
    m = _HAZARD_ACCESS.match(line)
    if f.kind == "race" and m:
        loc = Location.parse(m.group(3))
        if not f.accesses:
            f.at(loc)
        f.accesses.append({"access": m.group(1).lower(), "kernel": loc.kernel, "file": loc.file,
                           "line": loc.line, "hazards": None, "thread": m.group(2).replace(" ", "")})
        return
    m = _AT.match(line)
    if m and f.function is None and f.kind != "race":
        f.at(Location.parse(m.group(1)))
        state["wrapped"] = f.file is None
        return
    m = _IN_FILE.match(line)
    if m and wrapped:  # "at fn+0x70" then "in file:53" on the next line
        f.file, f.line = m.group(1), int(m.group(2))
        return
    m = _THREAD.search(line)
    if m and f.thread is None:
        f.thread, f.block = m.group(1).replace(" ", ""), m.group(2).replace(" ", "")
        return
    m = _NEAREST.search(line)
    if m:
        f.oob_bytes, f.oob_side, f.allocation_size = _int(m.group(1)), m.group(2).lower(), _int(m.group(4))
        return
    m = _UNINIT_AT.search(line)
    if m:
        f.message += f"; {line}"


def parse(text: str, tool: str = "memcheck") -> Report:
    """Every finding of a compute-sanitizer text log, merged by place and kind."""
    report = Report(tool)
    merged: dict[tuple, Finding] = {}
    current: Finding | None = None
    state: dict = {}

    def close() -> None:
        nonlocal current
        if current is not None:
            k = current.key()
            if k in merged:
                kept = merged[k]
                kept.count += current.count
                if current.oob_bytes is not None and (kept.oob_bytes is None or current.oob_bytes > kept.oob_bytes):
                    kept.oob_bytes, kept.oob_side = current.oob_bytes, current.oob_side
                for a, b in zip(kept.accesses, current.accesses):
                    if b.get("hazards"):
                        a["hazards"] = (a.get("hazards") or 0) + b["hazards"]
            else:
                merged[k] = current
                report.findings.append(current)
        current = None

    for raw in text.splitlines():
        line = _PREFIX.sub("", raw, count=1).strip() if _PREFIX.match(raw) else raw.strip()
        if not line:
            close()
            continue
        s = _SUMMARY.search(line)
        if s:
            close()
            report.complete = True
            n = _int(s.group(4)) if s.group(4) is not None else _int(s.group(2))
            report.errors = (report.errors or 0) + (n or 0)
            continue
        opened = _header(line, tool)
        if opened is not None:
            close()
            current = opened
            state = {}
            continue
        if current is not None and not _FRAME.match(line):
            _detail(current, line, state)
    close()
    return report
