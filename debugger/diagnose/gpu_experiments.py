"""Counterfactual experiments for faults only a GPU shows (run only with --device cuda).

Triton's interpreter runs programs one after another and multiplies in full fp32 on int64 NumPy
offsets, so these faults never show there; on a GPU a small rewrite of the candidate, run on the
failing checks, turns a suspicion into evidence:
- tf32: `input_precision="ieee"` on every tl.dot; passing names low_precision_accumulator.
- int64: every address product of a program id, an index or a stride in int64; index_overflow.
- serialised launch: the grid split into launches of one program each, in program order (the
  program ids offset by kernel arguments); passing names write_race, or scan_semantics when the
  kernel scans (a carry read across programs). The class's own recipes then run as experiments,
  so that the patch that really fixes it is the first proposal.
- repeated run: the first failing check run several times; outputs that differ run to run (drift)
  are a race or a cross-program dependency (the tag run_to_run_drift).
The last two run only where the source has a shape a race needs (or the run drifted already), the
int64 one only where a launch's tensors span 2^31 bytes or a check hit an illegal address: a GPU
benchmark pays for none elsewhere.
Each record has the shape of debugger/diagnose/experiments.py's (recipe, bug_class, result, ...).
"""
from __future__ import annotations

import math
import re
import time

from debugger.case import Case
from debugger.recipes.base import Patch
from debugger.recipes.gpu_faults import SCANS, Int64OffsetTerms
from debugger.recipes.layout import DotIeeePrecision, tf32_dots
from debugger.recipes.syntax import Source
from debugger.source.edits import Edit, apply_edits
from debugger.source.edits import source_hash
from debugger.source.tree import call_arg, parses, text

SERIAL_CAP = 1 << 16  # programs a serialised launch may run one by one
REPEATS = 3
INT32_SPAN = 1 << 31  # bytes: a tensor below this has fewer than 2^31 elements
SERIAL_PARAMS = ("_kd_pid0", "_kd_pid1", "_kd_pid2", "_kd_np0", "_kd_np1", "_kd_np2")
SERIAL_HELPER = '''

def _kd_serial(kernel, grid):
    """kernel[grid] as one launch per program, in program order (kdebug's serialised-launch experiment)."""
    def launch(*args, **kwargs):
        meta = dict(zip(getattr(kernel, "arg_names", []), args), **kwargs)
        g = grid(meta) if callable(grid) else grid
        g = tuple(int(v) for v in (g if isinstance(g, (tuple, list)) else (g,)))
        g = g + (1,) * (3 - len(g))
        if g[0] * g[1] * g[2] > {cap}:
            raise RuntimeError(f"serialised launch: {{g}} is more than {cap} programs")
        for z in range(g[2]):
            for y in range(g[1]):
                for x in range(g[0]):
                    kernel[(1, 1, 1)](*args, **kwargs, _kd_pid0=x, _kd_pid1=y, _kd_pid2=z,
                                      _kd_np0=g[0], _kd_np1=g[1], _kd_np2=g[2])
    return launch
'''.format(cap=SERIAL_CAP)


def ieee_patch(src: str) -> Patch | None:
    """Every tl.dot in full fp32 (None without a tf32 dot)."""
    s = Source(src)
    if not s.ok or not tf32_dots(s):
        return None
    return next(iter(DotIeeePrecision().propose(src, {"recipe": "dot_ieee_precision"})), None)


def int64_patch(src: str) -> Patch | None:
    """Every address product in int64 (None when nothing is left to widen)."""
    return next(iter(Int64OffsetTerms().propose(src, {"recipe": "int64_offset_terms"})), None)


def _axis(call) -> int | None:
    a = call_arg(call, 0, "axis")
    v = text(a) if a is not None else "0"
    return int(v) if re.fullmatch(r"[012]", v) else None


def serial_source(src: str) -> str | None:
    """The candidate with every launch of its kernels split into launches of one program each.

    In each kernel `tl.program_id(a)` becomes `(tl.program_id(a) + _kd_pid<a>)` and
    `tl.num_programs(a)` becomes `_kd_np<a>` (new parameters, not specialised); each
    `kernel[grid](...)` becomes `_kd_serial(kernel, grid)(...)`. None when a kernel takes a
    computed axis, ends in *args/**kwargs, or nothing is launched."""
    s = Source(src)
    if not s.ok or not s.kernels:
        return None
    edits: list[Edit] = []
    names = {k.name for k in s.kernels}
    for k in s.kernels:
        for c in k.calls("tl.program_id"):
            a = _axis(c)
            if a is None:
                return None
            edits.append(Edit.replace(c, f"({text(c)} + _kd_pid{a})"))
        for c in k.calls("tl.num_programs"):
            a = _axis(c)
            if a is None:
                return None
            edits.append(Edit.replace(c, f"_kd_np{a}"))
        ps = k.fn.child_by_field_name("parameters")
        last = [p for p in ps.named_children if p.type != "comment"]
        if not last or last[-1].type in ("list_splat_pattern", "dictionary_splat_pattern"):
            return None
        edits.append(Edit.insert(last[-1].end_byte, ", " + ", ".join(f"{p}=0" for p in SERIAL_PARAMS)))
        for d in k.decorators:
            if re.fullmatch(r"@\s*(triton\.)?jit", text(d).strip()):
                edits.append(Edit.replace(d, f"@triton.jit(do_not_specialize={list(SERIAL_PARAMS)!r})"
                                          if "triton." in text(d) else
                                          f"@jit(do_not_specialize={list(SERIAL_PARAMS)!r})"))
    launches = [l for l in s.launches if l.kernel in names]
    if not launches:
        return None
    for l in launches:
        f = l.call.child_by_field_name("function")  # the subscript kernel[grid]
        edits.append(Edit.replace(f, f"_kd_serial({l.kernel}, {text(l.grid)})"))
    out = apply_edits(s.data, edits)
    if out is None:
        return None
    out = out.rstrip("\n") + "\n" + SERIAL_HELPER
    return out if parses(out) else None


def serial_class(src: str) -> str:
    """The class a passing serialised launch names: a scan reading across programs, else a race."""
    s = Source(src)
    return "scan_semantics" if any(k.calls(*SCANS) for k in s.kernels) else "write_race"


def _record(case: Case, report, name: str, cls: str, description: str, new_src: str, rep, lines=()) -> dict:
    baseline = len(report.failed_checks)
    failed = len(rep.failed_checks)
    result = "fixed" if rep.status == "pass" else \
        "better" if rep.status in ("mismatch", "runtime_error") and failed < min(baseline, len(rep.checks) or 1) \
        else "no_change" if rep.status == report.status else "worse"
    return {"recipe": name, "bug_class": cls, "description": description, "lines": list(lines), "result": result,
            "status": rep.status, "message": (rep.message or "")[:400], "gpu": True,
            "base_hash": source_hash(case.candidate_src), "patch_hash": source_hash(new_src)}


def repeated_run(case: Case, spec: dict, device: str, timeout: float) -> tuple[dict, bool]:
    """The failing check run REPEATS times (each run twice): drift between runs, or verdicts or
    errors that differ from one run to the next, are a race. Returns (record, drifted)."""
    from debugger.evaluate import evaluate

    specs = [dict(spec, name=f"{spec['name']}#run{i}") for i in range(REPEATS)]
    rep = evaluate(case, device, checks=specs, timeout=timeout)
    drifts = [c.drift for c in rep.checks if c.drift is not None and math.isfinite(c.drift) and c.drift > 0]
    errs = {round(c.max_abs_err, 12) for c in rep.checks
            if getattr(c, "max_abs_err", None) is not None and math.isfinite(c.max_abs_err)}
    verdicts = {c.passed for c in rep.checks if c.status != "skipped"}
    drifted = bool(drifts) or len(errs) > 1 or len(verdicts) > 1
    what = (f"max drift {max(drifts):.3g}" if drifts else "errors differ run to run" if len(errs) > 1
            else "passes on some runs only" if len(verdicts) > 1 else "identical outputs")
    return ({"recipe": "repeat_run", "bug_class": "write_race", "result": "drift" if drifted else "stable",
             "description": f"check {spec['name']} run {REPEATS} times on the GPU: {what}", "lines": [],
             "status": rep.status, "message": (rep.message or "")[:400], "gpu": True}, drifted)


def race_suspected(src: str, report) -> bool:
    """A shape a race needs: stores programs share, a read of what other programs store, or drift."""
    from debugger.recipes import propose_all

    if any(c.drift is not None and math.isfinite(c.drift) and c.drift > 0 for c in report.checks):
        return True
    return bool(propose_all(src, bug_classes=["write_race", "scan_semantics"]))


def run_gpu_experiments(case: Case, report, device: str, timeout: float = 120.0, seconds: float | None = None,
                        launch_bytes: int | None = None) -> tuple[list[dict], set[str]]:
    """The GPU-only experiments on the failing checks: (records, tags). Nothing off a GPU.
    `launch_bytes`, the largest span a launch's tensors cover (None: unknown), gates the int64 one:
    an int32 offset wraps only past 2^31 elements, so below 2^31 bytes it cannot."""
    from debugger.diagnose.experiments import failing_specs, run_experiments
    from debugger.evaluate import evaluate, lost_cuda_context
    from debugger.recipes import propose_all

    if device != "cuda" or report.status not in ("mismatch", "runtime_error"):
        return [], set()
    specs = [s for s in failing_specs(report) if s.get("kind") != "kernelbench"][:3]
    if not specs:
        return [], set()
    src, out, tags = case.candidate_src, [], set()
    t0 = time.monotonic()

    def spent() -> bool:
        return seconds is not None and out and time.monotonic() - t0 > seconds

    # A check that hit an illegal address recorded no launch (a wrapped offset is one way to get there):
    # the span the others saw does not bound it.
    wide = launch_bytes is None or launch_bytes >= INT32_SPAN or any(lost_cuda_context(c) for c in report.checks)
    for patch in (ieee_patch(src), int64_patch(src) if wide else None):
        if patch is None or spent():
            continue
        rep = evaluate(case.with_candidate(patch.new_src), device, checks=specs, timeout=timeout)
        out.append(_record(case, report, patch.recipe, patch.bug_class, f"GPU experiment: {patch.description}",
                           patch.new_src, rep, patch.sites))
        if out[-1]["result"] == "fixed":
            return out, tags
    if not race_suspected(src, report):
        return out, tags
    serial = serial_source(src)
    if serial is not None and not spent():
        cls = serial_class(src)
        rep = evaluate(case.with_candidate(serial), device, checks=specs, timeout=timeout)
        out.append(_record(case, report, "serial_launch", cls,
                           "GPU experiment: every launch split into one launch per program, in program order",
                           serial, rep))
        if out[-1]["result"] == "fixed":
            # the class is named; its recipes' patches run next, so the one that fixes it leads the proposals
            fixes = propose_all(src, hints={"bug_class": cls}, bug_classes=[cls])
            out += run_experiments(case, report, fixes, [cls], device=device, budget=2, timeout=timeout)
    if not spent():
        record, drifted = repeated_run(case, specs[0], device, timeout)
        out.append(record)
        if drifted:
            tags.add("run_to_run_drift")
    return out, tags
