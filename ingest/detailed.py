"""The other KernelBench run layout: `problem_<P>_kernel.py` files beside `detailed_results.json`.

Some KernelBench runners (the technoabsurdist fork's opus runs) write one `problem_<P>_kernel.py` per
problem, with no level or sample in the name, and one results file for the run:
`detailed_results.json` = {run_info: {level, model, ...}, config: {model_name, ...}, results: [...],
summary}, or `checkpoint.json` = {results: [...]} while the run is in progress. Each result is
`{problem_id, success, eval_result: {compiled, correctness, runtime, metadata}}`; a problem whose
evaluation itself broke has `success: false` and an `error` instead of `eval_result`.

`read_results` turns this into what the eval_results.json reader consumes (problem id -> list of
result objects, sample 0), so `kernelbench.read` handles both layouts alike. A harness error is kept
as `harness_error`, not as the kernel's error: the log records no verdict for that answer.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ingest.attempt import Malformed

KERNEL_RE = re.compile(r"(?:^|/)problem_(?P<problem>\d+)_kernel\.py$")
RESULTS_FILES = ("detailed_results.json", "checkpoint.json")
LEVEL_RE = re.compile(r"level_?(\d+)", re.I)


@dataclass
class RunResults:
    """What a run's results file says: the level, the model, and the results by problem id."""

    path: Path | None = None
    level: int | None = None
    model: str | None = None
    results: dict = field(default_factory=dict)      # problem id (str) -> [result object]
    malformed: list = field(default_factory=list)


def results_file(folder: Path) -> Path | None:
    """The run's results file (detailed_results.json before checkpoint.json), None when it has none."""
    for name in RESULTS_FILES:
        if (folder / name).is_file():
            return folder / name
    return None


def is_kernel(path: Path) -> bool:
    """A `problem_<P>_kernel.py` directly in a folder that holds a results file of this layout."""
    return bool(KERNEL_RE.search(path.name)) and results_file(path.parent) is not None


def problem_of(path: Path) -> int | None:
    m = KERNEL_RE.search(path.name)
    return int(m.group("problem")) if m else None


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _as_result(r: dict) -> dict:
    """One runner result as a KernelBench result object (sample 0)."""
    ev = r.get("eval_result")
    if isinstance(ev, dict):
        return {**ev, "sample_id": 0}
    out = {"sample_id": 0, "compiled": None, "correctness": None, "metadata": {}}
    if r.get("error"):
        out["harness_error"] = str(r["error"])
    return out


def read_results(folder: Path) -> RunResults:
    """The results file of a run folder of this layout (see the module doc); problems are reported in
    `malformed`, never raised."""
    folder = Path(folder)
    out = RunResults(path=results_file(folder))
    m = LEVEL_RE.search(folder.name)
    name_level = int(m.group(1)) if m else None
    if out.path is None:
        out.level = name_level
        return out
    try:
        data = json.loads(out.path.read_text())
    except (OSError, UnicodeDecodeError) as e:
        out.malformed.append(Malformed(str(out.path), f"cannot read: {e}"))
        data = None
    except json.JSONDecodeError as e:
        out.malformed.append(Malformed(f"{out.path}:{e.lineno}", f"not valid JSON: {e.msg}"))
        data = None
    if not isinstance(data, dict):
        if data is not None:
            out.malformed.append(Malformed(str(out.path), f"expected an object, got {type(data).__name__}"))
        out.level = name_level
        return out
    info = data.get("run_info") if isinstance(data.get("run_info"), dict) else {}
    config = data.get("config") if isinstance(data.get("config"), dict) else {}
    out.level = _int(info.get("level")) or _int(config.get("level")) or name_level
    model = info.get("model") or config.get("model_name") or config.get("model")
    out.model = str(model) if model else None
    results = data.get("results")
    if not isinstance(results, list):
        out.malformed.append(Malformed(str(out.path), "no results list"))
        return out
    for i, r in enumerate(results):
        where = f"{out.path}#results[{i}]"
        if not isinstance(r, dict):
            out.malformed.append(Malformed(where, f"expected a result object, got {type(r).__name__}"))
            continue
        pid = _int(r.get("problem_id"))
        if pid is None:
            out.malformed.append(Malformed(where, "problem_id is not an integer"))
            continue
        out.results.setdefault(str(pid), []).append(_as_result(r))
    return out
