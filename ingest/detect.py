"""What to read under PATH, and with which reader: the plan of an ingest.

`--format auto` looks at each thing: a folder of generated `level_<L>_problem_<P>_sample_<S>_kernel.py`
files (or of `problem_<P>_kernel.py` beside detailed_results.json) is a KernelBench run; a .jsonl file
whose records carry `candidate_src` is our attempt log, one whose records carry turns or messages is a
trace file; a .json file is a trace file (eval_results.json and detailed_results.json stand for their
run folder). A forced format reads only what that format can read. An unusable PATH (missing,
unreadable, or with nothing to read) raises InvalidInput with one line.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from debugger.errors import InvalidInput
from ingest import detailed, jsonl, kernelbench, traces

FORMATS = ("auto", "kernelbench", "traces", "jsonl")
SNIFF_LINES = 50


@dataclass(frozen=True)
class Unit:
    """One thing to read: a run folder or a file, and its format."""

    format: str
    path: Path


def _sniff_jsonl(path: Path) -> str | None:
    """jsonl or traces by the first records that parse; None if none does."""
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            for _, line in zip(range(SNIFF_LINES), fh):
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if jsonl.looks_like(rec):
                    return "jsonl"
                if traces.looks_like(rec):
                    return "traces"
    except OSError:
        return None
    return None


def _sniff_json(path: Path) -> str | None:
    """traces if the file holds trace records (or cannot be parsed: the reader reports it); None otherwise."""
    if _results_file_of_run(path):
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return "traces"
    if isinstance(data, dict):
        key = next((k for k in traces.LIST_KEYS if isinstance(data.get(k), list)), None)
        data = data[key] if key else [data]
    if isinstance(data, list) and any(traces.looks_like(r) or jsonl.looks_like(r) for r in data[:20]):
        return "traces"
    return None


def _results_file_of_run(path: Path) -> bool:
    """A run's results file: eval_results.json, or a detailed-layout results file beside its kernels."""
    if path.name == kernelbench.EVAL_FILE:
        return True
    return path.name in detailed.RESULTS_FILES and any(detailed.is_kernel(k)
                                                       for k in path.parent.glob("problem_*_kernel.py"))


def _file_unit(path: Path, fmt: str) -> Unit | None:
    if fmt == "jsonl":
        return Unit("jsonl", path) if path.suffix == ".jsonl" else None
    if fmt == "traces":
        return Unit("traces", path) if path.suffix in (".json", ".jsonl") else None
    if path.suffix == ".jsonl":
        return Unit(_sniff_jsonl(path) or "jsonl", path)
    if path.suffix == ".json":
        kind = _sniff_json(path)
        return Unit(kind, path) if kind else None
    return None


def plan(path: Path | str, fmt: str = "auto") -> tuple[list[Unit], list[str]]:
    """(units to read, files looked at and left alone); InvalidInput if PATH gives nothing to read."""
    path = Path(path)
    if fmt not in FORMATS:
        raise InvalidInput(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if not path.exists():
        raise InvalidInput(f"no such file or folder: {path}")
    if path.is_file():
        if _results_file_of_run(path) and fmt in ("auto", "kernelbench"):
            return [Unit("kernelbench", path.parent)], []
        if fmt == "kernelbench":
            raise InvalidInput(f"--format kernelbench reads a run folder, not a file: {path}")
        try:
            with path.open("rb") as fh:
                fh.read(1)
        except OSError as e:
            raise InvalidInput(f"cannot read {path}: {e.strerror or e}") from None
        unit = _file_unit(path, fmt)
        if unit is None:
            want = {"jsonl": "a .jsonl file", "traces": "a .json or .jsonl trace file"}.get(
                fmt, "a run folder, a .json trace file or a .jsonl log")
            raise InvalidInput(f"not a generation log: {path} (expected {want})")
        return [unit], []
    if not path.is_dir():
        raise InvalidInput(f"not a file or folder: {path}")
    units: list[Unit] = []
    runs = kernelbench.run_folders(path) if fmt in ("auto", "kernelbench") else []
    units.extend(Unit("kernelbench", r) for r in runs)
    skipped: list[str] = []
    if fmt != "kernelbench":
        for f in sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")):
            if any(r == f.parent or r in f.parents for r in runs) and f.suffix == ".json":
                continue  # eval_results.json and friends belong to their run
            unit = _file_unit(f, fmt)
            if unit is None:
                skipped.append(str(f))
            else:
                units.append(unit)
    if not units:
        what = {"kernelbench": "KernelBench run folders (level_<L>_problem_<P>_sample_<S>_kernel.py)",
                "jsonl": ".jsonl attempt logs", "traces": ".json/.jsonl trace files"}.get(
            fmt, "generation logs (KernelBench run folders, .json trace files, .jsonl logs)")
        raise InvalidInput(f"no {what} under {path}")
    return units, skipped


def problems_dir(path: Path | str | None) -> Path | None:
    """The --problems checkout, checked (InvalidInput if it is not a folder)."""
    if path is None:
        return None
    p = Path(path)
    if not p.is_dir():
        raise InvalidInput(f"--problems: not a folder: {p}")
    return p
