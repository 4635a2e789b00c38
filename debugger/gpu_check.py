"""Would the candidate compile on a GPU? The parent's side of debugger/sandbox/gpu_compile.py.

On the CPU, the candidate worker compiles each kernel launch the interpreter runs for sm_90 (no GPU
needed; in the sandbox, never here) and writes one line per launch key to its scratch folder; `collect`
reads them, even from a worker killed for time. Results are cached in this process per (kernel source,
specialisation), so a repair loop pays once per kernel version. A kernel the interpreter passed that
cannot compile for a GPU turns the evaluation into `compile_error` with the compiler's message and the
kernel line (`apply`): it must never pass silently; any other status names it too, and error_score
counts it (records.GPU_COMPILE_PENALTY). KDEBUG_GPU_COMPILE=0 turns the check off. Cost measured on
the CPU: 0.05-0.15 s per distinct specialisation (front end to PTX), one for examples/softmax's 16
checks (0.15 s of a 10-16 s evaluation), so it runs in every CPU evaluation.
"""
from __future__ import annotations

import json
import os

_CACHE: dict[str, dict] = {}  # key -> result, for every key a worker compiled in this process
MAX_CACHE = 512


def enabled(device: str) -> bool:
    return device == "cpu" and os.environ.get("KDEBUG_GPU_COMPILE", "1") != "0"


def setup_fields(device: str) -> dict:
    """What the candidate worker's setup needs to compile its launches (nothing when off)."""
    if not enabled(device):
        return {}
    return {"gpu_compile": True, "gpu_compile_skip": sorted(_CACHE)}


def collect(worker) -> list[dict]:
    """The results of the worker's launches (cached ones included), read from its scratch folder; a
    worker that was killed still left the lines it wrote. ok None: no verdict (time bound)."""
    path = getattr(worker, "scratch", None)
    try:
        lines = (path / "gpu_compile.jsonl").read_text().splitlines() if path is not None else []
    except OSError:
        return []
    out = []
    for raw in lines:
        try:
            r = json.loads(raw)
        except ValueError:
            continue
        if not r.get("cached") and r.get("ok") is not None:
            if len(_CACHE) >= MAX_CACHE:
                _CACHE.pop(next(iter(_CACHE)))
            _CACHE[r["key"]] = {k: v for k, v in r.items() if k != "key"}
        known = _CACHE.get(r["key"]) if r.get("cached") else r
        if known is not None:
            out.append(dict(known, key=r["key"]))
    return out


def failures(results: list[dict]) -> list[dict]:
    return [r for r in results if r.get("ok") is False]


def describe(failure: dict) -> str:
    line = f" (line {failure['line']})" if failure.get("line") else ""
    return f"kernel {failure.get('kernel')}{line} does not compile for sm_90: {failure.get('error')}"


def apply(report, results: list[dict]) -> None:
    """Record the failures in the report; an interpreter pass with one becomes compile_error (both
    verdicts), any other status says it too."""
    bad = failures(results)
    if not bad:
        return
    report.gpu_compile = [{k: r.get(k) for k in ("kernel", "line", "error", "stage")} for r in bad]
    text = "; ".join(describe(r) for r in bad[:3])
    if report.status == "pass":
        report.status = "compile_error"
        report.message = f"passes on the CPU interpreter, but {text}"
    else:
        report.message = (report.message + "; " if report.message else "") + f"also: {text}"
    for verdict in report.verdicts.values():
        if verdict.get("status") == "pass":
            verdict["status"] = "compile_error"
            verdict["message"] = f"passes on the CPU interpreter, but {text}"


def compiles_now(best_report: dict, report) -> bool:
    """The best version did not compile for a GPU (kernels listed in gpu_compile on the CPU; on a GPU a
    check that failed compiling it) and this one does: progress a screen on the failing checks cannot see."""
    best_report = best_report or {}
    before = bool(best_report.get("gpu_compile")) or (
        best_report.get("device") == "cuda" and failed_compiling(best_report.get("checks", [])) is not None)
    return before and not report.gpu_compile and failed_compiling(report.checks) is None


def _status(check) -> str | None:
    return check.get("status") if isinstance(check, dict) else getattr(check, "status", None)


def failed_compiling(checks):
    """On a GPU: the first check whose run failed compiling a kernel (Triton compiles at the first launch
    of each specialisation), or None. One is enough: the kernel does not compile for those inputs, even
    where other checks' arguments (a stride of 1 specialised to a constant, say) took a path that does.
    Check objects or dicts."""
    return next((c for c in checks if _status(c) == "compile_error"), None)
