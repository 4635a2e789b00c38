"""A real pool's answers, each with the verdict its pipeline recorded, written out as case folders.

    answers, skipped = read_pool("/work/shared/real/kernelbench-fork")   # or a tritonbench-style pool
    for a in answers:
        a.write(scratch / "cases")                                       # -> a kdebug case folder

Two kinds of pool:
- `kernelbench`: a KernelBench checkout (or the fork): run folders under `runs/` (either layout
  `kernelbench` reads) and the problems under `KernelBench/level<L>/`. Each generated kernel is one
  answer; its recorded verdict is KernelBench's `correctness` (pass / fail, None when the log records
  none), its recorded class the ingest class (`classify`); an out-of-memory runtime error is marked,
  since on the fork's level-3 run it was the harness's GPU that was full, not the kernel's fault.
- `cases`: folders of case folders (reference.py, candidate.py, case.toml) grouped by what they are
  (tritonbench-t-dev: `nearmiss/` answers failed, `honest/` answers passed).

Nothing is written into the pool: `Answer.write` puts the case folder where it is told.
"""
from __future__ import annotations

import re
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ingest import classify as classifier
from ingest import kernelbench
from ingest.cases import slug, write_case
from ingest.detect import plan
from ingest.pipeline import normalise

CASE_GROUPS = {"nearmiss": "fail", "honest": "pass", "fail": "fail", "pass": "pass", "correct": "pass",
               "mismatch": "fail"}
OOM_RE = re.compile(r"out of memory", re.I)


@dataclass
class Answer:
    """One generated answer of a pool and what its pipeline recorded about it."""

    id: str                           # unique within the pool: run/level<L>/<P> or group/<case>
    pool: str                         # kernelbench | cases
    problem: str
    recorded: str | None              # pass | fail | None (no verdict recorded)
    recorded_class: str               # ingest class, or the case group (nearmiss, honest)
    recorded_reason: str = ""
    language: str = "unknown"         # triton | cuda | torch | unknown
    model: str | None = None
    location: str = ""
    reference_src: str | None = None
    candidate_src: str | None = None
    source_folder: Path | None = None  # a case folder of a `cases` pool, copied as it is
    attempt: object = field(default=None, repr=False)
    attempt_hash: str | None = None

    def usable(self) -> str | None:
        """Why no case folder can be written (None: it can)."""
        if self.source_folder is not None:
            return None
        if not self.reference_src:
            return "no reference for this problem"
        if not self.candidate_src:
            return "no candidate code"
        return None

    def write(self, root: Path) -> Path:
        """Write this answer's case folder under `root` and return it."""
        folder = Path(root) / self.id.replace("/", "__")
        if self.source_folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            for name in ("reference.py", "candidate.py", "case.toml"):
                if (self.source_folder / name).is_file():
                    shutil.copyfile(self.source_folder / name, folder / name)
            return folder
        klass, reason = self.recorded_class, self.recorded_reason
        return write_case(folder, self.attempt, self.reference_src, self.candidate_src, self.attempt_hash or "",
                          klass.split(" ")[0], reason)

    def row(self) -> dict:
        """The answer's fields for a result row (no sources)."""
        return {"id": self.id, "pool": self.pool, "problem": self.problem, "model": self.model,
                "language": self.language, "recorded": self.recorded, "recorded_class": self.recorded_class,
                "recorded_reason": self.recorded_reason[:300], "location": self.location}


def language(src: str | None) -> str:
    """triton, cuda (load_inline / cpp_extension), torch (neither), unknown (no code)."""
    if not src:
        return "unknown"
    if "load_inline" in src or "cpp_extension" in src or "__global__" in src:
        return "cuda"
    if "@triton.jit" in src or "triton.jit" in src or "@triton.autotune" in src:
        return "triton"
    return "torch"


def pool_kind(path: Path) -> str:
    """`cases` when PATH holds groups of case folders (or is one group), else `kernelbench`."""
    path = Path(path)
    groups = [p for p in path.iterdir() if p.is_dir() and _case_folders(p)] if path.is_dir() else []
    if groups or (path.is_dir() and _case_folders(path)):
        return "cases"
    return "kernelbench"


def _case_folders(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir()
                  if p.is_dir() and (p / "reference.py").is_file() and (p / "candidate.py").is_file())


def read_cases_pool(path: Path) -> list[Answer]:
    """Answers of a pool of case folders; the verdict comes from the group folder's name (or case.toml's
    `kind`, or its [oracle] status)."""
    path = Path(path)
    groups = [p for p in sorted(path.iterdir()) if p.is_dir() and _case_folders(p)]
    if not groups:
        groups = [path]
    answers = []
    for group in groups:
        for folder in _case_folders(group):
            meta = {}
            if (folder / "case.toml").is_file():
                try:
                    meta = tomllib.loads((folder / "case.toml").read_text())
                except (tomllib.TOMLDecodeError, UnicodeDecodeError):
                    meta = {}
            kind = str(meta.get("kind") or group.name)
            oracle = meta.get("oracle") if isinstance(meta.get("oracle"), dict) else {}
            recorded = CASE_GROUPS.get(kind.lower()) or CASE_GROUPS.get(str(oracle.get("status", "")).lower())
            prov = meta.get("provenance") if isinstance(meta.get("provenance"), dict) else {}
            cand = (folder / "candidate.py").read_text(errors="replace")
            answers.append(Answer(
                id=f"{group.name}/{folder.name}" if group != path else folder.name, pool="cases",
                problem=str(prov.get("op") or meta.get("operator") or folder.name), recorded=recorded,
                recorded_class=kind, recorded_reason=str(meta.get("description", ""))[:300],
                language=language(cand), model=prov.get("model"), location=str(folder), source_folder=folder))
    return answers


def read_kernelbench_pool(path: Path, problems: Path | None = None) -> tuple[list[Answer], list[str]]:
    """Answers of every run folder under PATH (PATH/runs when it has one) with references from
    `problems` (default: PATH itself, a checkout holding KernelBench/level<L>/); and what was not read."""
    path = Path(path)
    runs = path / "runs" if (path / "runs").is_dir() else path
    catalogue = kernelbench.Problems(Path(problems) if problems else path)
    units, _ = plan(runs, "kernelbench")
    answers, skipped = [], []
    for unit in units:
        for item in kernelbench.read(unit.path, catalogue):
            if not hasattr(item, "problem_id"):
                skipped.append(f"{item.location}: {item.reason}")
                continue
            klass, reason = classifier.classify(item)
            if klass == "runtime_error" and OOM_RE.search(item.error or ""):
                klass = "runtime_error (out of memory)"
            reference, candidate = normalise(item)
            recorded = {True: "pass", False: "fail"}.get(item.correct)
            if recorded is None and klass not in ("unverifiable", "correct"):
                recorded = "fail"  # a compile or runtime error recorded without a correctness flag
            sample = item.meta.get("sample_id")
            answer_id = f"{slug(Path(item.source).name, 60)}/{item.problem_id}" + (f"/s{sample}" if sample else "")
            answers.append(Answer(
                id=answer_id, pool="kernelbench",
                problem=f"{item.problem_id} {item.meta.get('problem_name', '')}".strip(), recorded=recorded,
                recorded_class=klass, recorded_reason=reason, language=language(candidate), model=item.model,
                location=item.location, reference_src=reference, candidate_src=candidate, attempt=item,
                attempt_hash=item.content_hash()))
    return answers, skipped


def read_pool(path: Path | str, problems: Path | str | None = None) -> tuple[list[Answer], list[str]]:
    """(answers, what could not be read) of a pool of either kind (see the module doc)."""
    path = Path(path)
    if pool_kind(path) == "cases":
        return read_cases_pool(path), []
    return read_kernelbench_pool(path, Path(problems) if problems else None)
