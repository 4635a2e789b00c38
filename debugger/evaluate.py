"""Full-coverage evaluation: does the candidate compute the same function as the reference?

Every check draws fresh inputs inside the sandbox workers, on the device: the task's get_inputs()
under several seeds, other value distributions, non-contiguous layouts, re-drawn parameters. For each
check the order is candidate, reference, candidate again on cloned inputs (catching caches, state
and input mutation); the candidate's allocations are poisoned (NaN on the first run, a sentinel on
the second) so unwritten elements never pass; outputs are compared in float64 by the reference
worker, which the candidate's process never sees.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from debugger import gpu_check, trace
from debugger.case import Case
from debugger.gpu_memory import crowded_out, says_out_of_memory
from debugger.lang.cuda.emulate import builds_extension
from debugger.records import CheckResult, ErrorSignature, EvalReport, OutputStats
from debugger.sandbox import WorkerDied, WorkerTimeout, get_sandbox
from debugger.sandbox.channel import blob_to_tensors

CRASHED_UNRUN = "not run: the candidate crashed"  # how a check left unrun after repeated crashes begins
SENTINEL_POISON = -7777.0  # second-run poison: elements equal to it were never written
# Failing checks' tensors kept for diagnosis, per evaluation: the first always, more while under this
# (a GPU-sized check is ~0.5 GB: float64 reference, inputs and two runs; diagnosis maps each one).
CAPTURE_BUDGET_BYTES = 1 << 30


def standard_checks() -> list[dict]:
    """The checks every evaluation runs (specs understood by debugger.inputs)."""
    specs = [{"name": f"seed{s}", "kind": "seed", "seed": s, "fingerprint": s < 2} for s in range(3)]
    for name, transform in (("x3", "scale:3"), ("x0.01", "scale:0.01"), ("x100", "scale:100"),
                            ("negated", "negate"), ("all_negative", "all_negative")):
        specs.append({"name": name, "kind": "distribution", "seed": 10, "transform": transform})
    specs.append({"name": "noncontiguous", "kind": "layout", "seed": 20, "transform": "noncontig"})
    specs.append({"name": "transposed", "kind": "layout", "seed": 21, "transform": "transposed"})
    specs.append({"name": "params_redrawn", "kind": "params", "seed": 30, "init_seed": 1, "param_noise": True})
    return specs


def repair_checks(semantics: str) -> list[dict]:
    """What a repair's evaluations run: the standard checks, and KernelBench's trials when the repair
    aims at KernelBench's verdict (`semantics` kernelbench)."""
    return standard_checks() + (kernelbench_checks() if semantics == "kernelbench" else [])


def kernelbench_checks(trials: int = 5) -> list[dict]:
    """KernelBench's correctness trials: its trial seeds, inputs drawn on the CPU, each model with its
    own initialisation under seed 42 (nothing copied), no poisoning, torch.allclose with the native
    reference output. Their verdict is the pipeline verdict (`--semantics kernelbench`)."""
    from debugger.inputs import KERNELBENCH_SEED

    return [{"name": f"kb_trial{i}", "kind": "kernelbench", "kb_trial": i, "init_seed": KERNELBENCH_SEED,
             "own_init": True, "poison": None} for i in range(trials)]


SEMANTICS = ("kernel", "kernelbench", "both")


def quick_checks() -> list[dict]:
    """A cheaper set for inner loops: one seed, one large-magnitude, one non-contiguous check."""
    keep = {"seed0", "x100", "noncontiguous", "params_redrawn"}
    return [s for s in standard_checks() if s["name"] in keep]


def hidden_checks(shape_variants: list[dict] | None = None) -> list[dict]:
    """Checks the repair loop never sees: other seeds, the same buffers refilled, and other shapes where
    given."""
    specs = [{"name": f"hidden_seed{s}", "kind": "hidden", "seed": s, "init_seed": s % 5}
             for s in (1009, 2027)]
    specs.append({"name": "hidden_x7neg", "kind": "hidden", "seed": 3041, "transform": "scale:-7"})
    # The same input buffers called first with other values: an output cached by buffer identity
    # (data_ptr, id) is replayed here, whatever the allocator happens to reuse between checks.
    specs.append({"name": "hidden_same_buffers", "kind": "hidden", "seed": 3067, "reuse_buffers": True})
    for i, shapes in enumerate(shape_variants or []):
        specs.append({"name": f"hidden_shape{i}", "kind": "hidden", "seed": 4000 + i, "shapes": shapes})
    return specs


@dataclass
class Evaluation:
    """An EvalReport plus, when captured, the tensors of failing checks (for diagnosis)."""

    report: EvalReport
    artifacts: dict = field(default_factory=dict)  # check name -> {"reference", "native", "inputs", "runs"}
    observations: dict = field(default_factory=dict)  # check name -> candidate-side facts (ops, launches...)
    captured_bytes: int = 0


def _signature(report: EvalReport) -> ErrorSignature:
    failed = report.failed_checks
    if not failed:
        return ErrorSignature(status=report.status, kind=report.status)
    first = failed[0]
    bad = next((o for o in first.outputs if not o.passed), None)
    kind = "exception" if first.status in ("runtime_error", "timeout", "compile_error") else "mismatch"
    if bad is not None:
        if bad.problem:
            kind = "shape" if "shape" in bad.problem else "dtype" if "dtype" in bad.problem else "structure"
        elif bad.nan_mismatch:
            kind = "nan"
    elif first.drift:
        kind = "drift"
    elif first.inputs_mutated:
        kind = "mutation"
    if first.status in ("runtime_error", "compile_error"):
        kind = first.message.split(":", 1)[0][:60] or kind
    return ErrorSignature(status=report.status, check=first.name, output=bad.index if bad else None,
                          first_wrong=bad.first_wrong if bad else None, kind=kind,
                          failed_checks=len(failed), frac_wrong=first.frac_wrong)


def _summarise(check: CheckResult) -> None:
    outs = [o for o in check.outputs if o.max_abs_err is not None]
    if outs:
        check.max_abs_err = max(o.max_abs_err for o in outs)
        check.max_rel_err = max((o.max_rel_err or 0.0) for o in outs)
        check.frac_wrong = max(o.frac_wrong for o in outs)


def _message(report: EvalReport) -> str:
    failed = report.failed_checks
    total = len([c for c in report.checks if c.status != "skipped"])
    if report.passed:
        return f"pass on {total} checks"
    if not failed:
        return report.message
    first = failed[0]
    bad = next((o for o in first.outputs if not o.passed), None)
    where = ""
    if bad is not None:
        where = bad.problem or (f"output {bad.index}: {bad.frac_wrong:.1%} of elements wrong, "
                                f"max_abs_err {bad.max_abs_err:.3g}, first at {bad.first_wrong}")
    detail = first.message or where
    return f"{report.status} on {len(failed)}/{total} checks (first: {first.name}: {detail})"


def _float(v):
    if isinstance(v, str):
        return float(v)
    return v


def evaluate(case: Case, device: str | None = None, *, atol: float | None = None, rtol: float | None = None,
             timeout: float = 120.0, memory_limit_gb: float | None = None, checks: list[dict] | None = None,
             capture: bool = False, fail_fast: bool = False, semantics: str = "kernel",
             kb_tolerance: float | None = None, sizes: str = "published") -> EvalReport:
    """Evaluate a candidate against its reference; see `run_evaluation` for the tensors too."""
    return run_evaluation(case, device, atol=atol, rtol=rtol, timeout=timeout, memory_limit_gb=memory_limit_gb,
                          checks=checks, capture=capture, fail_fast=fail_fast, semantics=semantics,
                          kb_tolerance=kb_tolerance, sizes=sizes).report


def run_evaluation(case: Case, device: str | None = None, *, atol: float | None = None,
                   rtol: float | None = None, timeout: float = 120.0, memory_limit_gb: float | None = None,
                   checks: list[dict] | None = None, capture: bool = False,
                   fail_fast: bool = False, sandbox=None, semantics: str = "kernel",
                   kb_tolerance: float | None = None, sizes: str = "published") -> Evaluation:
    """Run every check in the sandbox; return the report (and captured tensors when asked).

    Without `checks`, both verdicts' checks run: the kernel checks and KernelBench's trials.
    `semantics` says which verdict sets the report's status (both are reported either way).
    `sizes` (debugger/sizes.py): published, small (batch-like constants halved until the inputs fit
    the device's budget) or auto (published where a check fits the device, else small).
    """
    from debugger.compare import KERNELBENCH_TOLERANCE
    from debugger.settings import default_device

    if semantics not in SEMANTICS:
        raise ValueError(f"semantics must be one of {', '.join(SEMANTICS)}, not {semantics!r}")
    device = device or default_device()
    atol = atol if atol is not None else case.atol
    rtol = rtol if rtol is not None else case.rtol
    kb_tolerance = kb_tolerance if kb_tolerance is not None else case.meta.get("kb_tolerance", KERNELBENCH_TOLERANCE)
    specs = [dict(s) for s in (checks or standard_checks() + kernelbench_checks())]
    for spec in specs:
        if spec.get("kind") == "kernelbench":
            spec["kb_tolerance"] = kb_tolerance
    t_start = time.perf_counter()
    report = EvalReport(status="pass", device=device, atol=atol, rtol=rtol, semantics=semantics)
    ev = Evaluation(report=report)
    sandbox = sandbox or get_sandbox(device, timeout=timeout, memory_limit_gb=memory_limit_gb)
    deny = [str(p) for p in {case.reference_path.parent if case.reference_path else None,
                             case.candidate_path.parent if case.candidate_path else None} if p]
    setup = {"reference_src": case.reference_src, "candidate_src": case.candidate_src,
             "deny_read": deny, "allow_write": [str(sandbox_cache_dir())], **gpu_check.setup_fields(device)}

    if device == "cpu" and is_cuda_candidate(case.candidate_src):
        from debugger.lang.cuda import emulate

        blocked = cuda_blocked_on_cpu(case.candidate_src)
        if blocked:
            report.status = "invalid_input"
            report.message = blocked
            return _finish(ev, t_start)
        report.emulation = emulate.EMULATED
        setup["emulation_pch"] = emulate.header_pch()  # built here: the worker may only read it
    reference = sandbox.spawn("reference", setup)
    candidate = None
    try:
        first_setup, _ = reference.wait_reply(timeout)
        if not first_setup.get("ok"):
            report.status = "invalid_input"
            report.message = f"reference cannot be loaded: {first_setup.get('error')}"
            return _finish(ev, t_start)
        if sizes != "published":
            report.sizes = _plan_sizes(case, reference, device, sizes, timeout)
            for spec in specs:
                if report.sizes.get("shapes") and not spec.get("shapes"):
                    spec["shapes"] = dict(report.sizes["shapes"])
                    spec["plan_shapes"] = True  # kdebug's reduced sizes, not a hidden shape the candidate must take
        candidate = sandbox.spawn("candidate", setup)
        import_timeout = max(timeout, EXTENSION_BUILD_SECONDS) if builds_extension(case.candidate_src) else timeout
        try:
            cand_setup, _ = candidate.wait_reply(import_timeout)
        except WorkerTimeout:
            report.status, report.message = "timeout", f"candidate import did not finish within {import_timeout:g} s"
            return _finish(ev, t_start)
        except WorkerDied as e:
            report.status, report.message = "runtime_error", f"candidate crashed while importing: {e}"
            return _finish(ev, t_start)
        if not cand_setup.get("ok"):
            report.status = cand_setup.get("status", "compile_error")
            report.message = f"candidate {cand_setup.get('stage', 'import')} failed: {cand_setup.get('error')}"
            report.log_tail = cand_setup.get("traceback", "")
            return _finish(ev, t_start)

        fresh, why = 0, "not run: the worker was killed"  # fresh: workers started after a lost CUDA context
        reduced_plan: dict = {}  # the sizes plan a check out of memory runs again at, made when first needed
        for i, spec in enumerate(specs):
            check = _new_check(spec)
            report.checks.append(check)
            t0 = time.perf_counter()
            stop = _run_check(check, spec, reference, candidate, ev, atol, rtol, timeout, capture)
            check.seconds = time.perf_counter() - t0
            if stop is None and _reducible_out_of_memory(check, spec):
                reduced = _reduced_spec(case, reference, device, spec, timeout, reduced_plan)
                if reduced is not None:  # the same check again at kdebug's reduced sizes, in its place
                    first_try = check
                    check = _new_check(reduced)
                    check.spec["published_sizes_out_of_memory"] = first_try.message[:300]
                    report.checks[-1] = check
                    t0 = time.perf_counter()
                    stop = _run_check(check, reduced, reference, candidate, ev, atol, rtol, timeout, capture)
                    check.seconds = first_try.seconds + time.perf_counter() - t0
            if stop == "invalid_reference":
                report.status = "invalid_input"
                report.message = f"reference fails on its own inputs: {check.message}"
                return _finish(ev, t_start)
            # A crashed candidate (a signal, not a timeout) leaves the next checks to a fresh process too:
            # a crash on one layout must not leave the hidden checks unrun (a cache cheat crashing on the
            # transposed check was accepted on the seeds alone).
            crashed = (stop == "dead" and check.status == "runtime_error" and candidate.dead
                       and reference is not None and not reference.dead)
            if not fail_fast and i + 1 < len(specs) and ((stop is None and lost_cuda_context(check)) or crashed):
                # Its CUDA context is gone or it died: the process is discarded, the next checks get a fresh one.
                candidate.close()
                fresh += 1
                candidate = sandbox.spawn("candidate", setup) if fresh <= MAX_FRESH_CANDIDATES else None
                try:
                    ok = candidate is not None and candidate.wait_reply(timeout)[0].get("ok")
                except (WorkerTimeout, WorkerDied):
                    ok = False
                if ok:
                    stop = None
                else:
                    stop, why = "dead", f"{CRASHED_UNRUN} or lost its CUDA context {fresh} times"
            if stop == "dead" and i + 1 < len(specs):
                for rest in specs[i + 1:]:
                    report.checks.append(CheckResult(name=rest["name"], kind=rest.get("kind", "seed"), passed=False,
                                                     status="skipped", message=why))
                break
            if fail_fast and not check.passed and check.status != "skipped":
                break
        if reference is not None and not reference.dead:
            try:
                sane, _ = reference.request({"op": "sanity", "atol": atol}, timeout=timeout)
                report.reference_warnings = sane.get("warnings", [])
            except (WorkerTimeout, WorkerDied):
                pass
        if candidate is not None:
            report.log_tail = candidate.log_tail(2000)
        gpu = gpu_check.collect(candidate) if candidate is not None else []
        ev = _finish(ev, t_start)
        if gpu_check.failures(gpu):  # an interpreted kernel a GPU build rejects (debugger/gpu_check.py)
            gpu_check.apply(ev.report, gpu)
            ev.report.signature = _signature(ev.report)
        return ev
    finally:
        reference.close()
        if candidate is not None:
            candidate.close()


def _new_check(spec: dict) -> CheckResult:
    """The record of one check about to run (passing until the run says otherwise)."""
    return CheckResult(name=spec["name"], kind=spec.get("kind", "seed"), passed=False, status="pass",
                       spec={k: v for k, v in spec.items() if k != "fingerprint"})


def _reducible_out_of_memory(check: CheckResult, spec: dict) -> bool:
    """A check of kdebug's own (not one of KernelBench's trials, which keep the published sizes) that ran
    out of memory at the published sizes: kdebug's two processes and a layout check's strided copies can
    need more memory than the operator does (8 GiB inputs on an 80 GiB GPU). A check skipped as crowded out
    counts too: the "other processes" include this evaluation's reference worker (crowded_out cannot tell)."""
    return (check.status in ("runtime_error", "skipped") and spec.get("kind") != "kernelbench"
            and not spec.get("shapes") and not check.not_applicable and says_out_of_memory(check.message))


def _reduced_spec(case: Case, reference, device: str, spec: dict, timeout: float, plan: dict) -> dict | None:
    """The check's spec at the `small` sizes plan (made once per evaluation, kept in `plan`), or None where
    the plan cannot reduce them."""
    if reference is None or reference.dead:
        return None
    if not plan:
        plan.update(_plan_sizes(case, reference, device, "small", timeout))
    shapes = plan.get("shapes")
    return dict(spec, shapes=dict(shapes), plan_shapes=True) if shapes else None


def _plan_sizes(case: Case, reference, device: str, mode: str, timeout: float) -> dict:
    """The shapes every check runs at, measured by the reference worker (see debugger/sizes.py)."""
    from debugger import sizes as plan

    free: dict = {}
    measured: dict = {}  # reduce_shapes measures the published shapes again: the reference is asked once

    def measure(shapes: dict):
        key = json.dumps(shapes, sort_keys=True)  # a list of widths among the values
        if key not in measured:
            measured[key] = _measure(shapes)
        return measured[key]

    def _measure(shapes: dict):
        try:
            header, _ = reference.request({"op": "input_bytes", "shapes": shapes}, timeout=timeout)
        except (WorkerTimeout, WorkerDied):
            return None
        free["bytes"] = header.get("device_free")
        if not shapes:
            free["forward_runs"] = header.get("ok") and not header.get("forward_error")
        elif free.get("forward_runs") and header.get("forward_error"):
            return None  # the reference's forward fails on shapes alone here (a window larger than the input)
        return (header["bytes"], header.get("flops"), header.get("param_bytes"), header.get("result_bytes")) \
            if header.get("ok") else None

    budget = plan.BUDGET_BYTES.get(device, plan.BUDGET_BYTES["cpu"])
    param_budget = plan.BUDGET_PARAM_BYTES.get(device, plan.BUDGET_PARAM_BYTES["cpu"])
    first = measure({})
    published = first[0] if first else None
    params = first[2] if first else None
    if mode == "auto" and published is not None:
        room = free.get("bytes") if device == "cuda" else 1 << 30
        estimate = plan.check_memory_estimate(published, first[3] or 0)
        if room and estimate <= room and (params or 0) <= param_budget:
            return {"mode": "auto", "shapes": {}, "published_input_bytes": published, "input_bytes": published,
                    "memory_estimate_bytes": estimate, "reduced": False, "param_bytes": params}
    shapes, published, now = plan.reduce_shapes(case.reference_src, measure, budget,
                                                flop_budget=plan.BUDGET_FLOPS.get(device), param_budget=param_budget)
    if shapes and not free.get("forward_runs"):
        shapes = _shapes_the_reference_runs(case, reference, shapes, timeout)
        now = (measure(shapes) or (published,))[0] if shapes else published
    reduced = measured.get(json.dumps(shapes, sort_keys=True)) if shapes else first
    return {"mode": mode, "shapes": shapes, "published_input_bytes": published, "input_bytes": now,
            "memory_estimate_bytes": plan.check_memory_estimate(now, (reduced[3] if reduced else None) or 0),
            "reduced": bool(shapes), "param_bytes": reduced[2] if reduced else None, "published_param_bytes": params}


def _shapes_the_reference_runs(case: Case, reference, shapes: dict, timeout: float) -> dict:
    """Reduced shapes the meta device could not vouch for (the reference's forward fails there whatever the
    shapes: `.item()`, data-dependent ops): one real forward of the reference at them, and while it fails the
    constant last in the scaling order (debugger/sizes.py) goes back to its published value. SwinMLP's Model
    asserts the image size it was built for: at a halved image every check failed, the reference's trial as much
    as the candidate's."""
    from debugger import sizes as plan

    order = [*plan.input_constants(case.reference_src), *plan.init_constants(case.reference_src)]
    shapes = dict(shapes)
    while shapes:
        if _reference_accepts(reference, {"name": "sizes_plan", "kind": "seed", "seed": 0, "shapes": shapes},
                              timeout):
            break
        scaled = [k for k in order if k in shapes] or list(shapes)[:1]
        shapes.pop(scaled[-1])
    return shapes


def sandbox_cache_dir(data: Path | None = None):
    """The compiler cache folder workers may write (Triton's cache; load_inline's builds under it): in kdebug's
    data folder, or in DATA, the one a kdebug subprocess with KDEBUG_DATA_DIR=DATA uses."""
    from debugger.settings import data_dir

    return (data if data is not None else data_dir()) / "triton-cache"


def _worst(statuses) -> str:
    for s in ("invalid_input", "compile_error", "timeout", "runtime_error", "mismatch"):
        if s in statuses:
            return s
    return "pass"


def _effective_status(check: CheckResult) -> str:
    """A check's status for its verdict: a skip that is not 'does not apply' (a worker that died or
    timed out before the check could run) leaves the verdict incomplete, never a silent pass."""
    if check.status != "skipped" or check.not_applicable:
        return check.status
    return "timeout" if "timed out" in check.message.lower() or "timeout" in check.message.lower() \
        else "runtime_error"


def _verdict(checks: list[CheckResult]) -> dict:
    """One verdict over its checks: status, the failing and the skipped checks (with reasons)."""
    return {"status": _worst([_effective_status(c) for c in checks]), "checks": len(checks),
            "failed": [c.name for c in checks if not c.passed and c.status != "skipped"],
            "skipped": {c.name: c.message for c in checks if c.status == "skipped"}}


def _set_verdicts(report: EvalReport) -> None:
    """Both verdicts from the checks; the selected one sets the status; say why they differ."""
    kernel = [c for c in report.checks if c.kind != "kernelbench"]
    pipeline = [c for c in report.checks if c.kind == "kernelbench"]
    if report.status != "pass":  # set before any check could decide (unusable input, no import): both alike
        report.verdicts = {"kernel": {"status": report.status, "checks": 0, "failed": [], "skipped": {}}}
        if report.semantics != "kernel":
            report.verdicts["kernelbench"] = dict(report.verdicts["kernel"])
        return
    report.verdicts = {"kernel": _verdict(kernel)} if kernel else {}
    if pipeline:
        report.verdicts["kernelbench"] = _verdict(pipeline)
    counted = [c for c in report.checks if report.counts(c)] or report.checks
    report.status = _worst([_effective_status(c) for c in counted]) if counted else "runtime_error"
    report.verdict_note = _verdict_note(report)


def seeds_pass(report: EvalReport) -> bool:
    """The kernel checks on the task's own inputs (the seeds) ran and passed, weights mapped in."""
    seeds = [c for c in report.checks if c.kind == "seed" and c.status != "skipped"]
    return bool(seeds) and all(c.passed for c in seeds)


def _verdict_note(report: EvalReport) -> str:
    """Why the kernel verdict and KernelBench's differ, or what fails KernelBench's when the kernel is
    right on the task's own inputs (empty when nothing needs saying)."""
    k, p = report.verdicts.get("kernel"), report.verdicts.get("kernelbench")
    if not k or not p:
        return ""
    right_on_task = k["status"] == "pass" or seeds_pass(report)
    if p["status"] != "pass" and right_on_task:
        pairs = (report.parameter_map or {}).get("pairs", [])
        differ = [x for x in pairs if (x.get("own_init_diff") or 0.0) > 0.0]
        also = "" if k["status"] == "pass" else \
            f"; the kernel also fails {', '.join(k['failed'][:6])} (inputs the task never draws)"
        if differ:
            listed = ", ".join(f"{x['candidate']} (Model's {x['reference']}, max |diff| {x['own_init_diff']:.3g})"
                               for x in differ[:6])
            return (f"parameter_init: with Model's weights mapped in the kernel passes the task's own inputs, but "
                    f"ModelNew builds {len(differ)} of its {len(pairs)} matched tensors differently under the same "
                    f"seed: {listed}{also}")
    if (k["status"] == "pass") == (p["status"] == "pass"):
        return ""
    if k["status"] == "pass":
        unmatched = (report.parameter_map or {}).get("unmatched_reference", [])
        extra = f"; Model's {', '.join(unmatched[:6])} matched nothing in ModelNew" if unmatched else ""
        return ("the kernel passes with Model's weights mapped in, but fails KernelBench's trials "
                f"({', '.join(p['failed'][:5])}){extra}")
    return (f"KernelBench's trials pass, but kdebug's checks fail on {', '.join(k['failed'][:8])}: inputs, "
            "layouts or re-drawn parameters KernelBench never draws, or kdebug's tighter tolerance")


def _finish(ev: Evaluation, t_start: float) -> Evaluation:
    if trace.enabled():
        trace.record("evaluation", t_start, checks=[c.name for c in ev.report.checks], status=ev.report.status)
    report = ev.report
    _set_verdicts(report)
    if report.status == "pass" and not report.checks:
        report.status = "runtime_error"
    report.signature = _signature(report) if report.status != "pass" else None
    if report.status in ("pass", "mismatch", "runtime_error", "timeout", "compile_error") and report.checks:
        report.message = _message(report) if not (report.status != "pass" and not report.failed_checks) \
            else report.message
    skipped = [c for c in report.checks if c.status == "skipped" and not c.not_applicable]
    if report.status != "pass" and not report.failed_checks and skipped and not report.message:
        report.message = (f"not judged: {len(skipped)} of {len(report.checks)} checks could not run "
                          f"(first: {skipped[0].name}: {skipped[0].message})")
    report.seconds = time.perf_counter() - t_start
    return ev


# CUDA errors that leave the process's context unusable: every later call in it fails with the same
# error, so a check run after one would report the earlier check's fault (out of memory is not one).
STICKY_CUDA_ERROR = re.compile(r"illegal memory access|illegal address|device-side assert|misaligned address|"
                               r"illegal instruction|unspecified launch failure|AcceleratorError", re.IGNORECASE)
MAX_FRESH_CANDIDATES = 2  # per evaluation; a kernel that faults on every check is not restarted for each


def lost_cuda_context(check: CheckResult) -> bool:
    """The candidate's run raised a CUDA error after which its process must be discarded."""
    return check.status == "runtime_error" and bool(STICKY_CUDA_ERROR.search(check.message or ""))


def _candidate_run(candidate, spec: dict, call: int, poison: float, timeout: float, check: CheckResult):
    """One candidate call; returns (header, blob) or None after filling `check` with the failure."""
    if not _post_candidate_run(candidate, spec, call, poison, check):
        return None
    return _candidate_reply(candidate, timeout, check)


def _post_candidate_run(candidate, spec: dict, call: int, poison: float, check: CheckResult) -> bool:
    try:
        candidate.post({"op": "run", "spec": dict(spec, call=call, poison=poison)})
    except WorkerDied as e:
        check.status, check.message = "runtime_error", f"candidate crashed: {e}"
        return False
    return True


def _phase(check: CheckResult, name: str, seconds) -> None:
    """Add `seconds` to the check's phase `name` (CheckResult.phases): at the published sizes a check takes
    10-20 s on an H100, and these say whether drawing inputs, running, moving outputs or comparing takes it."""
    if isinstance(seconds, (int, float)):
        check.phases[name] = round(check.phases.get(name, 0.0) + seconds, 3)


def _worker_phases(check: CheckResult, who: str, header: dict, waited: float) -> None:
    """A worker's run: the parent's wait for its reply (with the outputs' transfer), the worker's own input draw,
    and its forward (the candidate's; the reference's whole run: build, draw, forward, float64 copy)."""
    _phase(check, f"{who}_wait", waited)
    _phase(check, f"{who}_draw", header.get("draw_seconds"))
    _phase(check, "candidate_forward" if who == "candidate" else "reference_run", header.get("seconds"))
    _peak(check, who, header)


def _peak(check: CheckResult, who: str, header: dict) -> None:
    """The most GPU memory the worker held in this check so far (its run, its comparison)."""
    if isinstance(header.get("peak_bytes"), int):
        check.peak_bytes[who] = max(check.peak_bytes.get(who, 0), header["peak_bytes"])


def _candidate_reply(candidate, timeout: float, check: CheckResult):
    t0 = time.perf_counter()
    try:
        header, blob = candidate.reply(timeout)
    except WorkerTimeout as e:
        check.status, check.message = "timeout", f"candidate: {e}"
        return None
    except WorkerDied as e:
        check.status, check.message = "runtime_error", f"candidate crashed: {e}"
        return None
    if not header.get("ok"):
        crowded = crowded_out(header.get("error"))
        check.status = "skipped" if crowded else header.get("status", "runtime_error")
        check.message = f"candidate: {crowded}" if crowded else f"candidate raised {header.get('error')}"
        return None
    _worker_phases(check, "candidate", header, time.perf_counter() - t0)
    return header, blob


# Importing a candidate that builds a C++/CUDA extension compiles it (nvcc, or g++ for the CPU emulation):
# about a minute per extension, several under load, which is not the per-check time limit's business.
EXTENSION_BUILD_SECONDS = 600.0


CUDA_ON_CPU = "the candidate's CUDA kernels need a GPU and nvcc (--device cuda)"


def is_cuda_candidate(src: str | None) -> bool:
    """The candidate builds CUDA: __global__ kernels in its extension strings (the CUDA language layer finds
    them) or `cuda_sources=` handed to load_inline. A C++-only extension builds and runs on the CPU."""
    if not src or ("load_inline" not in src and "__global__" not in src):
        return False
    if re.search(r"\bcuda_sources\s*=", src):
        return True
    from debugger.lang import get

    return bool(get("cuda").kernels(src))


def cuda_blocked_on_cpu(src: str | None) -> str | None:
    """Why a CUDA candidate cannot run on the CPU (kdebug's emulation does not run what it uses), or None."""
    if not is_cuda_candidate(src):
        return None
    from debugger.lang.cuda import emulate

    blocked = emulate.blocker(src)
    return f"{CUDA_ON_CPU}: {blocked}" if blocked else None


def _reference_failed(check: CheckResult, error: str | None, prefix: str = "") -> str | None:
    """The reference's run of a check failed: the check is skipped, and the evaluation stops as
    invalid_reference, unless other processes crowded the run out of the GPU (only this check is lost)."""
    crowded = crowded_out(error)
    check.status = "skipped"
    check.message = f"reference failed: {crowded}" if crowded else prefix + (error or "")
    return None if crowded else "invalid_reference"


def _comparison_failed(check: CheckResult, error: str | None) -> None:
    """The comparison runs in the reference's worker, kdebug's own step: where it ran out of GPU memory (others
    crowding it, or the outputs' size), the check could not run - skipped with its reason, never the
    candidate's runtime error (opus level2/5 was rejected so beside nine other gates on an H100, run 47)."""
    if says_out_of_memory(error):
        check.status, check.message = "skipped", f"comparison failed: {crowded_out(error) or error}"
    else:
        check.status, check.message = "runtime_error", f"comparison failed: {error}"


def _varies_inputs(spec: dict) -> bool:
    return spec.get("kind") in ("layout", "hidden", "params") or bool(spec.get("shapes"))


def _reference_accepts(reference, spec: dict, timeout: float) -> bool:
    try:
        header, _ = reference.request({"op": "run", "spec": dict(spec, capture=False)}, timeout=timeout)
    except (WorkerTimeout, WorkerDied):
        return True  # no evidence against the inputs: keep the candidate's failure
    return bool(header.get("ok"))


def _localise(reference, candidate, timeout: float) -> dict:
    """Hand the candidate's per-launch buffers (bytes, never unpickled here) to the reference worker."""
    try:
        w_header, w_blob = candidate.request({"op": "writes"}, timeout=timeout)
        if not w_header.get("ok"):
            return {"error": w_header.get("error", "no launch writes")}
        header, _ = reference.request({"op": "localise", "writes": w_header["writes"]}, w_blob, timeout=timeout)
    except (WorkerTimeout, WorkerDied) as e:
        return {"error": str(e)}
    header.pop("has_blob", None)
    return header if header.get("ok") else {"error": header.get("error", "localisation failed")}


def _trials_side_by_side(device: str) -> bool:
    return device != "cpu"


def _run_kernelbench_trial(check, spec, reference, candidate, timeout) -> str | None:
    """One KernelBench trial: the candidate once (no poison), the reference, torch.allclose.

    Both draw the trial's inputs on the CPU, as KernelBench does: seconds per GiB at the published sizes.
    On a GPU the two runs go side by side (the drawn tensors leave the host at once); on the CPU one after
    the other, as each run keeps its inputs in host memory."""
    side_by_side = _trials_side_by_side(reference.sandbox.device)
    if not _post_candidate_run(candidate, spec, 1, None, check):
        return "dead" if candidate.dead else None
    run = None if side_by_side else _candidate_reply(candidate, timeout, check)
    if run is None and not side_by_side:
        return "dead" if candidate.dead else None
    try:
        t_ref = time.perf_counter()
        reference.post({"op": "run", "spec": spec})
        if side_by_side:
            run = _candidate_reply(candidate, timeout, check)
        ref_header, _ = reference.reply(timeout)
        if run is None:
            return "dead" if candidate.dead else None
        if not ref_header.get("ok"):
            return _reference_failed(check, ref_header.get("error"), "reference failed: ")
        _worker_phases(check, "reference", ref_header, time.perf_counter() - t_ref)
        t_cmp = time.perf_counter()
        cmp_header, _ = reference.request({"op": "compare", "run": 1, "semantics": "kernelbench",
                                           "kb_tolerance": spec["kb_tolerance"]}, run[1], timeout=timeout)
        _phase(check, "compare", time.perf_counter() - t_cmp)
        _peak(check, "reference", cmp_header)
    except (WorkerTimeout, WorkerDied) as e:
        if run is None and check.status != "pass":  # the candidate's own failure is this check's result
            return "dead" if candidate.dead else None
        check.status, check.message = "skipped", f"reference failed: {e}"
        return "dead"
    if not cmp_header.get("ok"):
        _comparison_failed(check, cmp_header.get("error"))
        return None
    stats = cmp_header["runs"][0]
    check.outputs = [OutputStats(**{k: (_float(v) if k in ("max_abs_err", "max_rel_err") else v)
                                    for k, v in s.items()}) for s in stats]
    _summarise(check)
    check.passed = all(s["passed"] for s in stats)
    if not check.passed:
        check.status = "mismatch"
        bad = next(o for o in check.outputs if not o.passed)
        check.message = bad.problem or f"not torch.allclose (atol=rtol={spec['kb_tolerance']:g})"
    return None


def _run_check(check, spec, reference, candidate, ev: Evaluation, atol, rtol, timeout, capture) -> str | None:
    """Run one check (candidate, reference, candidate); fill `check`. Returns a stop reason or None."""
    if spec.get("kind") == "kernelbench":
        return _run_kernelbench_trial(check, spec, reference, candidate, timeout)
    # A localising run poisons with the finite sentinel, so that a NaN a kernel writes counts as written.
    first = _candidate_run(candidate, spec, 1, SENTINEL_POISON if spec.get("localise") else float("nan"),
                           timeout, check)
    if first is None:
        if candidate.dead:
            return "dead"
        if _varies_inputs(spec) and not _reference_accepts(reference, spec, timeout):
            # Shapes or parameters the reference itself rejects (a channel count its groups do not
            # divide, say) test nothing: the candidate is not at fault for refusing them too.
            check.status, check.passed, check.not_applicable = "skipped", False, True
            check.message = "reference does not accept these inputs either"
        return None
    t_ref = time.perf_counter()
    try:
        ref_header, _ = reference.request({"op": "run", "spec": dict(spec, capture=capture)}, timeout=timeout)
    except (WorkerTimeout, WorkerDied) as e:
        check.status, check.message = "skipped", f"reference failed: {e}"
        return "invalid_reference" if spec.get("kind") == "seed" else "dead"
    _worker_phases(check, "reference", ref_header, time.perf_counter() - t_ref)
    if not ref_header.get("ok"):
        if spec.get("kind") in ("layout", "hidden", "params") or spec.get("shapes"):
            check.status, check.passed, check.not_applicable = "skipped", False, True
            check.message = f"reference does not accept these inputs ({ref_header.get('error')})"
            return None
        return _reference_failed(check, ref_header.get("error"))
    second = _candidate_run(candidate, spec, 2, SENTINEL_POISON, timeout, check)
    if second is None:
        return "dead" if candidate.dead else None
    runs_blobs = [first[1], second[1]]
    per_run = []
    drift = None
    for n, blob in enumerate(runs_blobs, start=1):
        t_cmp = time.perf_counter()
        try:
            cmp_header, _ = reference.request({"op": "compare", "atol": atol, "rtol": rtol, "run": n,
                                               "sentinel": SENTINEL_POISON if n == 2 else None}, blob,
                                              timeout=timeout)
        except (WorkerTimeout, WorkerDied) as e:
            check.status, check.message = "skipped", f"comparison failed: {e}"
            return "dead"
        _phase(check, "compare", time.perf_counter() - t_cmp)
        _peak(check, "reference", cmp_header)
        if not cmp_header.get("ok"):
            _comparison_failed(check, cmp_header.get("error"))
            return None
        per_run.append(cmp_header["runs"][0])
        if cmp_header.get("drift") is not None:
            drift = _float(cmp_header["drift"])
        unwritten = cmp_header.get("unwritten", 0) if n == 2 else 0
        if n == 1 and spec.get("kind") == "distribution" and cmp_header.get("reference_nonfinite"):
            # Outside the operator's domain (negated inputs of a log, x100 that overflows): the
            # reference itself yields NaN/Inf, so nothing here is held against the candidate.
            check.status, check.passed, check.not_applicable = "skipped", False, True
            check.message = (f"not applicable: the reference itself yields {cmp_header['reference_nonfinite']} "
                             "NaN/Inf values on these inputs")
            return None
    stats = per_run[0]
    # An element that fails only on the second run (sentinel poison) was never written either.
    if per_run[0] and per_run[1] and all(s["passed"] for s in per_run[0]) and not all(s["passed"] for s in per_run[1]):
        stats = per_run[1]
    check.outputs = [OutputStats(**{k: (_float(v) if k in ("max_abs_err", "max_rel_err") else v)
                                    for k, v in s.items()}) for s in stats]
    check.drift = drift
    check.inputs_mutated = bool(first[0].get("inputs_mutated") or second[0].get("inputs_mutated"))
    _summarise(check)
    both_pass = all(s["passed"] for s in per_run[0]) and all(s["passed"] for s in per_run[1])
    check.passed = both_pass and not check.inputs_mutated
    if not check.passed:
        check.status = "mismatch"
        if both_pass and check.inputs_mutated:
            check.message = "the candidate modified its inputs"
        elif all(s["passed"] for s in per_run[0]):
            check.message = _second_run_differs(unwritten, drift, bool(ev.report.emulation))
        else:
            bad = next(o for o in check.outputs if not o.passed)
            check.message = bad.problem or ""
    if first[0].get("buffers_reused") is False:  # hidden_same_buffers ran as a plain hidden check
        check.message = ("; ".join(filter(None, [check.message, "no other draw of get_inputs() has these inputs' "
                                                 "shapes: the same buffers were not refilled"])))
    if first[0].get("parameter_map") is not None and ev.report.parameter_map is None:
        ev.report.parameter_map = first[0]["parameter_map"]
    ev.observations[check.name] = {k: first[0].get(k) for k in
                                   ("launches", "ops", "aliases_input", "written_by_kernel", "derived_from_kernels", "output_types",
                                    "seconds", "probes", "output_bytes", "largest_launch_tensor_bytes", "work",
                                    "buffers")}
    ev.observations[check.name]["ops_second"] = second[0].get("ops")
    ev.observations[check.name]["inputs_noncontiguous"] = ref_header.get("inputs_noncontiguous")
    if ref_header.get("work") is not None:  # what the reference computed, for PyTorch's share of the work
        ev.observations[check.name]["reference_work"] = ref_header["work"]
    if spec.get("localise") and first[0].get("launch_writes"):
        ev.observations[check.name]["localisation"] = _localise(reference, candidate, timeout)
    if capture and not check.passed and (not ev.artifacts or ev.captured_bytes < CAPTURE_BUDGET_BYTES):
        _capture(check, spec, reference, first[1], second[1], ev, timeout)
    return None


def _second_run_differs(unwritten: int, drift: float | None, emulated: bool) -> str:
    """Why a candidate right on its first run is wrong on the second, on the same inputs."""
    if unwritten:
        return (f"the second run left {unwritten} output elements unwritten (they kept the poison "
                f"{SENTINEL_POISON:g}): the kernel does not write its whole output")
    by = f" by up to {drift:.3g}" if drift is not None else ""
    if emulated:
        # roles.py: the emulation's second run lets each warp run alone between barriers.
        return (f"the second run, each warp run alone between barriers, differs from the first{by}: a race "
                "between warps (a value in shared or global memory read and overwritten with no barrier between)")
    return f"the second run on the same inputs differs from the first{by}: a race between threads, or state kept between calls"


def _capture(check, spec, reference, run1, run2, ev: Evaluation, timeout: float) -> None:
    """Keep a failing check's tensors (reference in float64, inputs, both runs) for diagnosis."""
    try:
        header, blob = reference.request({"op": "captured"}, timeout=timeout)
    except (WorkerTimeout, WorkerDied):
        return
    if not header.get("ok") or blob is None:
        return
    ref64, ref_inputs = blob_to_tensors(blob)
    ev.captured_bytes += len(blob) + len(run1 or b"") + len(run2 or b"")
    ev.artifacts[check.name] = {"reference": ref64, "inputs": ref_inputs,
                                "runs": [blob_to_tensors(run1), blob_to_tensors(run2)], "spec": spec}
