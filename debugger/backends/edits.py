"""Search/replace edit blocks: the format a model answers in, parsed and applied to the kernel source.

    <<<<<<< SEARCH
    exact lines of the current kernel
    =======
    replacement lines
    >>>>>>> REPLACE
"""
from __future__ import annotations

import re

BLOCK_RE = re.compile(r"<{5,9} SEARCH\s*\n(.*?)\n?={5,9}\s*\n(.*?)\n?>{5,9} REPLACE", re.S)


def parse_edits(text: str) -> list[dict]:
    """All search/replace blocks in a model's answer, in order."""
    return [{"search": m.group(1), "replace": m.group(2)} for m in BLOCK_RE.finditer(text)]


def _loose_find(src: str, search: str) -> tuple[int, int] | None:
    """Find `search` ignoring trailing whitespace and indentation differences line by line."""
    want = [l.strip() for l in search.strip("\n").splitlines()]
    lines = src.splitlines(keepends=True)
    for i in range(len(lines) - len(want) + 1):
        if all(lines[i + j].strip() == want[j] for j in range(len(want))):
            start = sum(len(l) for l in lines[:i])
            end = start + sum(len(l) for l in lines[i:i + len(want)])
            return start, end
    return None


def apply_edits(src: str, edits: list[dict]) -> tuple[str | None, str]:
    """Apply edits in order; (new source, '') or (None, why it could not be applied)."""
    out = src
    for n, e in enumerate(edits, start=1):
        search, replace = e["search"], e["replace"]
        if not search.strip():
            return None, f"edit {n} has an empty SEARCH block"
        count = out.count(search)
        if count == 1:
            out = out.replace(search, replace, 1)
            continue
        if count > 1:
            return None, f"edit {n}: SEARCH text occurs {count} times; it must be unique"
        span = _loose_find(out, search)
        if span is None:
            return None, f"edit {n}: SEARCH text not found in the kernel"
        start, end = span
        indent = re.match(r"\s*", out[start:end]).group(0)
        given = re.match(r"\s*", search.strip("\n")).group(0)
        body = "\n".join((indent + l[len(given):] if l.startswith(given) else l)
                         for l in replace.strip("\n").splitlines())
        out = out[:start] + body + ("\n" if out[start:end].endswith("\n") else "") + out[end:]
    return out, ""
