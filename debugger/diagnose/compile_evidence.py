"""A kernel body that a GPU build rejects, as diagnosis evidence, and when it calls for a rewrite.

Two sources: on the CPU, the sm_90 compile of every interpreted launch (report.gpu_compile, from
debugger/gpu_check.py); on a GPU, a check that failed as compile_error (gpu_check.failed_compiling;
Triton compiles at the first launch of each specialisation, the message carries the compiler's error).
The failure supports the class gpu_incompatible (recipes in debugger/recipes/gpu_compat.py, which read
the error text through the `gpu_errors` hint), adds the tag gpu_compile_error, and when no untried
recipe of that class is left, the verdict is needs_rewrite at once (`body_cannot_compile`): no edit of
the values can make a kernel that does not compile pass on a GPU.
"""
from __future__ import annotations

from debugger.gpu_check import failed_compiling

CLASS = "gpu_incompatible"
TAG = "gpu_compile_error"
FINDING_SCORE = 8.0


def _get(report, name, default=None):
    return report.get(name, default) if isinstance(report, dict) else getattr(report, name, default)


def failures(report, device: str) -> list[dict]:
    """[{kernel, line, error, stage}] of kernels that do not compile for a GPU (report object or dict)."""
    out = [dict(f) for f in (_get(report, "gpu_compile") or [])]
    first = failed_compiling(_get(report, "checks") or []) if device == "cuda" else None
    if first is not None:
        out.append({"kernel": None, "line": None, "stage": "gpu", "error": _get(first, "message") or ""})
    return out


def hints(report, device: str) -> dict:
    """What the recipes read: the compiler's messages."""
    errors = [f["error"] for f in failures(report, device) if f.get("error")]
    return {"gpu_errors": errors} if errors else {}


def describe(f: dict) -> str:
    where = f"kernel {f['kernel']}" if f.get("kernel") else "the kernel"
    at = f" line {f['line']}" if f.get("line") else ""
    return f"{where}{at} does not compile for a GPU: {f.get('error', '')[:300]}"


def findings(fails: list[dict], sites: list[dict]) -> list[dict]:
    """A finding for the ranking (diagnose/ranking.py): the compile failure backs gpu_incompatible."""
    if not fails:
        return []
    return [{"bug_class": CLASS, "score": FINDING_SCORE, "evidence": [describe(f) for f in fails[:3]],
             "lines": sorted({f["line"] for f in fails if f.get("line")}),
             "recipes": sorted({s["recipe"] for s in sites if s.get("bug_class") == CLASS})}]


def rewrite_verdict(fails: list[dict], proposals: list) -> dict | None:
    """needs_rewrite when a body cannot compile for a GPU and no recipe rewrites the construct in this
    source (`proposals`: the recipes' patches of it, Patch objects or dicts with bug_class). Tried or not:
    an experiment on the interpreter cannot show what such a patch fixes (it compiles on a GPU), and once
    applied the construct is gone, so a recipe that still proposes has work left."""
    classes = {p.get("bug_class") if isinstance(p, dict) else getattr(p, "bug_class", None) for p in proposals}
    if not fails or CLASS in classes:
        return None
    return {"reason": "body_cannot_compile",
            "evidence": [describe(f) for f in fails[:3]] + ["no recipe rewrites the construct for a GPU"]}
