"""Reader for KernelBench run folders: generated kernels with eval_results.json beside them.

A run folder (runs/<run_name>/) holds `level_<L>_problem_<P>_sample_<S>_kernel.py` per generated
kernel (some versions: level_<L>/problem_<P>/sample_<S>/kernel.py), `eval_results.json` once evaluated,
and often `generation_config.yaml` (model_name). eval_results.json maps the problem id (a string) to
its result, in one of three shapes depending on the KernelBench version: one result object
(`{"sample_id", "compiled", "correctness", "metadata", "runtime", ...}`), a list of them, or a mapping
sample id -> result. `metadata` carries the failure: compilation_error(_name), runtime_error(_name),
cuda_error, other_error, correctness_issue ("Output mismatch" or a shape mismatch) and per-trial
max_difference / avg_difference strings.

The other layout, `problem_<P>_kernel.py` beside `detailed_results.json` (the level and model in the
results file), is read through `ingest.detailed` into the same result objects.

References come from a KernelBench checkout (`--problems DIR`): DIR/KernelBench/level<L>/<P>_<Name>.py
(DIR may also be the inner KernelBench/ folder).
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterator

from ingest import detailed
from ingest.attempt import Attempt, Malformed
from ingest.fields import FieldError, as_bool, as_float, first, metadata_errors

FORMAT = "kernelbench"
KERNEL_RE = re.compile(r"(?:^|/)level_?(?P<level>\d+)[_/]problem_?(?P<problem>\d+)"
                       r"(?:[_/]sample_?(?P<sample>\d+))?[_/]kernel\.py$")
EVAL_FILE = "eval_results.json"
ERROR_KEYS = ("compilation_error", "runtime_error", "cuda_error", "other_error", "error_message", "gpu_error",
              "evaluation_error", "error", "timeout_error")
NAME_KEYS = ("compilation_error_name", "runtime_error_name", "cuda_error_name", "other_error_name")


def _match(root: Path, path: Path) -> tuple[Path, re.Match] | None:
    """(run folder, match) when `path` is a generated kernel of a run folder at or under `root`."""
    rel = path.relative_to(root).as_posix()
    m = KERNEL_RE.search(rel)
    if not m:
        if detailed.is_kernel(path) and (path.parent == root or root in path.parents):
            return path.parent, detailed.KERNEL_RE.search(path.name)
        return None
    prefix = rel[:m.start()].strip("/")
    return (root / prefix if prefix else root), m


def kernel_files(folder: Path, flat_level: int | None = None) -> dict[tuple[int, int, int], Path]:
    """(level, problem, sample) -> kernel file, for the kernels of one run folder (any layout; a
    `problem_<P>_kernel.py` file takes `flat_level`, and is left out while that is None)."""
    found = {}
    for path in folder.rglob("*kernel.py"):
        hit = _match(folder, path)
        if hit and hit[0] == folder:
            m = hit[1]
            if "level" in m.groupdict():
                found[(int(m.group("level")), int(m.group("problem")), int(m.group("sample") or 0))] = path
            elif flat_level is not None:
                found[(flat_level, int(m.group("problem")), 0)] = path
    return found


def run_folders(root: Path) -> list[Path]:
    """Every run folder at or under `root` (a folder is one when it holds generated kernels)."""
    if not root.is_dir():
        return []
    return sorted({hit[0] for p in root.rglob("*kernel.py") if (hit := _match(root, p))})


class Problems:
    """Reference sources of a KernelBench checkout by (level, problem id)."""

    def __init__(self, root: Path | None):
        self.root = Path(root) if root else None
        self._cache: dict[tuple[int, int], tuple[Path | None, str | None]] = {}

    def level_dir(self, level: int) -> Path | None:
        if self.root is None:
            return None
        for base in (self.root / "KernelBench", self.root):
            for name in (f"level{level}", f"level_{level}"):
                if (base / name).is_dir():
                    return base / name
        return None

    def find(self, level: int, problem: int) -> tuple[Path | None, str | None]:
        key = (level, problem)
        if key not in self._cache:
            path = src = None
            folder = self.level_dir(level)
            if folder is not None:
                matches = sorted(folder.glob(f"{problem}_*.py"))
                if matches:
                    path = matches[0]
                    try:
                        src = path.read_text()
                    except (OSError, UnicodeDecodeError):
                        src = None
            self._cache[key] = (path, src)
        return self._cache[key]


def _results_by_sample(value, where: str) -> Iterator[tuple[int, dict] | Malformed]:
    """(sample id, result) pairs of one problem's entry, whichever of the three shapes it has."""
    def sample_of(r: dict, default: int):
        sid = r.get("sample_id", default)
        try:
            return int(sid)
        except (TypeError, ValueError):
            return None

    if isinstance(value, list):
        for i, r in enumerate(value):
            if not isinstance(r, dict):
                yield Malformed(f"{where}[{i}]", f"expected a result object, got {type(r).__name__}")
                continue
            sid = sample_of(r, i)
            yield (sid, r) if sid is not None else Malformed(f"{where}[{i}]", "sample_id is not an integer")
    elif isinstance(value, dict) and any(k in value for k in ("compiled", "correctness", "metadata")):
        sid = sample_of(value, 0)
        yield (sid, value) if sid is not None else Malformed(where, "sample_id is not an integer")
    elif isinstance(value, dict):
        for k, r in value.items():
            if not isinstance(r, dict):
                yield Malformed(f"{where}/{k}", f"expected a result object, got {type(r).__name__}")
                continue
            sid = sample_of(r, k)
            yield (sid, r) if sid is not None else Malformed(f"{where}/{k}", "sample id is not an integer")
    else:
        yield Malformed(where, f"expected a result object, a list or a mapping, got {type(value).__name__}")


def _error_text(metadata: dict) -> str | None:
    name = first(metadata, NAME_KEYS)
    parts = metadata_errors(metadata, ERROR_KEYS)
    issue = metadata.get("correctness_issue")
    if not parts:
        return "Output mismatch" if issue else None
    text = "; ".join(str(p) for p in parts)
    return f"{name}: {text}" if name and name not in text else text


def _result_fields(r: dict) -> dict:
    metadata = r.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise FieldError("metadata must be an object")
    error = _error_text(metadata)
    timed_out = as_bool(first(r, ("timeout", "timed_out")), "timed_out")
    if any("timeout" in str(k).lower() or "timed out" in str(v).lower()[:200] for k, v in metadata.items()):
        timed_out = True
    return {"compiled": as_bool(r.get("compiled"), "compiled"),
            "correct": as_bool(first(r, ("correctness", "correct")), "correctness"),
            "error": error, "timed_out": timed_out,
            "max_difference": as_float(first(metadata, ("max_difference", "max_diff")), "max_difference")}


def _model_name(folder: Path) -> str | None:
    cfg = folder / "generation_config.yaml"
    if not cfg.is_file():
        return None
    try:
        import yaml

        data = yaml.safe_load(cfg.read_text())
    except Exception:  # noqa: BLE001 - a broken config only loses the model name
        return None
    if isinstance(data, dict):
        name = data.get("model_name") or data.get("model")
        return str(name) if name else None
    return None


def _read_eval(folder: Path) -> tuple[dict | None, list[Malformed]]:
    path = folder / EVAL_FILE
    if not path.is_file():
        return None, []
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as e:
        return None, [Malformed(str(path), f"cannot read: {e}")]
    except json.JSONDecodeError as e:
        return None, [Malformed(f"{path}:{e.lineno}", f"not valid JSON: {e.msg}")]
    if not isinstance(data, dict):
        return None, [Malformed(str(path), f"expected an object keyed by problem id, got {type(data).__name__}")]
    return data, []


def read(folder: Path, problems: Problems | None = None) -> Iterator[Attempt | Malformed]:
    """Every generated kernel of a run folder as an Attempt (with its eval result where one was recorded)."""
    folder = Path(folder)
    problems = problems or Problems(None)
    evals, problems_found = _read_eval(folder)
    yield from problems_found
    model = _model_name(folder)
    eval_path = folder / EVAL_FILE
    run = detailed.read_results(folder) if evals is None else None
    if run is not None and run.path is not None:
        yield from run.malformed
        evals, eval_path, model = run.results, run.path, model or run.model
    kernels = kernel_files(folder, run.level if run is not None else None)
    if run is not None and run.level is None:
        for path in sorted(folder.glob("problem_*_kernel.py")):
            yield Malformed(str(path), "no level for this kernel: neither its results file nor the folder "
                                       "name gives one")
    levels = sorted({lvl for lvl, _, _ in kernels})
    results: dict[tuple[int, int], dict] = {}
    for pid_text, value in (evals or {}).items():
        where = f"{eval_path}#{pid_text}"
        try:
            pid = int(str(pid_text).split("_")[0])
        except ValueError:
            yield Malformed(where, "problem id is not an integer")
            continue
        for item in _results_by_sample(value, where):
            if isinstance(item, Malformed):
                yield item
                continue
            sid, r = item
            if not any((lvl, pid, sid) in kernels for lvl in levels):
                yield Malformed(f"{where}/{sid}", f"no kernel file for problem {pid} sample {sid}")
                continue
            results[(pid, sid)] = r
    for (level, pid, sid), path in sorted(kernels.items()):
        location = str(path)
        try:
            candidate = path.read_text()
        except (OSError, UnicodeDecodeError) as e:
            yield Malformed(location, f"cannot read kernel: {e.__class__.__name__}")
            continue
        ref_path, reference = problems.find(level, pid)
        fields: dict = {}
        r = results.get((pid, sid))
        if r is not None:
            try:
                fields = _result_fields(r)
            except FieldError as e:
                yield Malformed(f"{eval_path}#{pid}/{sid}", str(e))
                continue
        meta = {"level": level, "sample_id": sid, "run": folder.name}
        if ref_path is not None:
            meta["reference_path"] = str(ref_path)
            meta["problem_name"] = ref_path.stem
        if r is not None and r.get("runtime") not in (None, -1, -1.0):
            meta["runtime"] = r.get("runtime")
        if r is not None and r.get("harness_error"):
            meta["harness_error"] = str(r["harness_error"])[:2000]
        yield Attempt(location=location, source=str(folder), format=FORMAT, problem_id=f"level{level}/{pid}",
                      history=f"{folder}::level{level}/{pid}", order=(sid,), reference_src=reference,
                      candidate_src=candidate, model=model, meta=meta, **fields)
