"""The dynamic half of the integrity gate: watch the candidate run in the sandbox.

From one evaluation that adds hidden checks (seeds, a scaling and shapes the repair loop never saw)
to the standard ones, and from what the candidate worker recorded during every forward (aten ops
through a TorchDispatchMode, Triton launches and the storage they received, output types and
aliasing), decide whether the kernels really compute the operator. The first check also logs every
aten op with shapes and FLOPs on both sides: PyTorch's measured share of the work (work.py) is judged
under the policy, and the gate hands it to the static torch_compute rule.
"""
from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass

from debugger.case import Case
from debugger.compare import KERNELBENCH_TOLERANCE
from debugger.evaluate import Evaluation, hidden_checks, run_evaluation, standard_checks
from debugger.integrity.findings import REJECT, WARN, Finding
from debugger.integrity.policy import KERNELBENCH
from debugger.integrity.work import Measurement, judge, measure


def shape_variants(reference_src: str, base: dict | None = None) -> list[dict]:
    """Other sizes for the reference's module-level int constants that shape its inputs (hidden
    shapes), around their published values or, for those in `base`, around base's (the reduced sizes
    of a --sizes small run). Constants only get_init_inputs() reads (a kernel size, a head count) are
    operator hyperparameters, not sizes: changing them changes the task, so they are kept."""
    tree = ast.parse(reference_src)
    consts = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            v = node.value
            if isinstance(v, ast.Constant) and type(v.value) is int and v.value > 1:
                consts[node.targets[0].id] = v.value
    get_inputs = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_inputs"), None)
    if get_inputs is not None:
        used = {n.id for n in ast.walk(get_inputs) if isinstance(n, ast.Name)}
        consts = {k: v for k, v in consts.items() if k in used}
    consts.update({k: v for k, v in (base or {}).items() if k in consts and type(v) is int and v > 1})
    if not consts:
        return []
    grow = {k: v + max(1, v // 7) + 2 for k, v in consts.items()}
    shrink = {k: max(2, v - max(1, v // 5) - 1) for k, v in consts.items()}
    return [grow, shrink]


# What each robustness check varies, and how a failure reads as a finding.
_ROBUSTNESS = {"noncontiguous": ("layout", "assumes contiguous inputs"),
               "transposed": ("layout", "assumes row-major inputs (fails on transposed ones)"),
               "negated": ("sign", "diverges for negated inputs"), "all_negative": ("sign", "diverges for negative inputs"),
               "hidden_x7neg": ("sign", "diverges for scaled negative inputs"),
               "x3": ("scale", "diverges for inputs scaled by 3"), "x0.01": ("scale", "diverges for inputs scaled by 0.01"),
               "x100": ("scale", "diverges for inputs scaled by 100"),
               # KernelBench's task has one size; kdebug's hidden sizes (around the reduced ones, under --sizes
               # small) may cross a regime the task never reaches: a block of min(n, 1024) threads whose tree
               # reduction needs a power of two is right at 4096 and wrong at 25 (qwencoder level1/47)
               "hidden_shape0": ("shape", "fails at a larger size than the task's"),
               "hidden_shape1": ("shape", "fails at a smaller size than the task's")}


def task_produces(reference_src: str, noncontiguous: bool | None = None) -> set[str]:
    """What the task's own get_inputs() produces: `layout` (a transposed, permuted or sliced input),
    `sign` (signed values: randn, normal, uniform over a signed range). `noncontiguous`: whether the
    drawn inputs held a strided view, as the reference's run measured it; without the measurement the
    source decides (a transpose in get_inputs(), which `(A + A.T) / 2` shows is no proof)."""
    m = re.search(r"def get_inputs\(.*?(?=\ndef |\Z)", reference_src, re.S)
    body = m.group(0) if m else ""
    produced = set()
    if noncontiguous if noncontiguous is not None else \
            re.search(r"\.(t|transpose|permute|mT|T)\b|\[[^\]]*::\s*\d", body):
        produced.add("layout")
    if re.search(r"\b(randn|randn_like|normal|normal_)\b|uniform_\(\s*-|\s-\s*0?\.5|\*\s*2\s*-\s*1", body):
        produced.add("sign")
    return produced


def robustness_split(failed: list, reference_src: str, policy: str,
                     noncontiguous: bool | None = None, repair: bool = False) -> tuple[list, list[str]]:
    """(failures that reject, robustness notes): under kernelbench a layout, value distribution or size the
    task's own inputs never take is a note, not a rejection; under strict every failure rejects. A `repair`
    is still held to the hidden sizes: they are the guard against a fix fitted to the sizes the loop saw."""
    if policy != KERNELBENCH:
        return failed, []
    produced = task_produces(reference_src, noncontiguous) | ({"shape"} if repair else set())
    rejecting, notes = [], []
    for check in failed:
        what = _ROBUSTNESS.get(check.name)
        if what is None or what[0] in produced:
            rejecting.append(check)
        else:
            notes.append(f"{what[1]} ({check.name}): {check.message or 'mismatch'}")
    return rejecting, notes


def precision_split(failed: list, policy: str, repair: bool = False) -> tuple[list, list[str]]:
    """(failures that reject, precision notes): under kernelbench a check whose every difference is within
    KernelBench's own tolerance (torch.allclose, atol=rtol=1e-2: no difference over 1e-2) is KernelBench's pass,
    an approximation (a tanh GELU for an exact one) and not a cheat; the kernel verdict still fails it. A repair
    is held to kdebug's tolerance."""
    if policy != KERNELBENCH or repair:
        return failed, []
    rejecting, notes = [], []
    for check in failed:
        err = check.max_abs_err
        # values only: no NaN or Inf where the reference has none, the same output twice (no race), inputs intact
        values_only = not check.inputs_mutated and not check.drift and check.outputs and all(
            not o.nan_mismatch and not o.inf_mismatch and o.problem is None for o in check.outputs)
        if check.status == "mismatch" and values_only and err is not None and math.isfinite(err) \
                and err <= KERNELBENCH_TOLERANCE:
            notes.append(f"differs within KernelBench's tolerance on {check.name} (max_abs_err {err:.3g} <= "
                         f"{KERNELBENCH_TOLERANCE:g}): KernelBench passes it, kdebug's kernel verdict does not")
        else:
            rejecting.append(check)
    return rejecting, notes


@dataclass
class DynamicRun:
    """One sandboxed run of the gate's checks: what every policy's judgement reads (judge_run)."""

    evaluation: Evaluation
    specs: list[dict]


def run_checks(case: Case, device: str, *, timeout: float = 120.0, full: bool = True,
               sizes: str = "published") -> DynamicRun:
    """Run the standard + hidden checks once, the first logging PyTorch's work. The run does not depend on the
    policy, only its judgement does: one run serves both (`kdebug check --policy both`)."""
    # The seeded check gives the observations; the standard checks themselves were run by `verify`
    # (a caller that skipped them passes full=True).
    base = None
    if sizes != "published":  # hidden shapes around the reduced sizes, which a first seeded run plans
        base = (run_evaluation(case, device, checks=standard_checks()[:1], timeout=timeout,
                               sizes=sizes).report.sizes or {}).get("shapes")
    specs = (standard_checks() if full else standard_checks()[:1]) + \
        hidden_checks(shape_variants(case.reference_src, base))
    specs[0] = dict(specs[0], work=True)
    return DynamicRun(run_evaluation(case, device, checks=specs, timeout=timeout, sizes=sizes), specs)


def judge_run(case: Case, run: DynamicRun, policy: str = KERNELBENCH,
              repair: bool = False) -> tuple[list[Finding], dict, Measurement | None]:
    """The findings of one run under one policy, the evaluation summary and PyTorch's measured work."""
    ev, specs = run.evaluation, run.specs
    report = ev.report
    findings: list[Finding] = []
    if report.status in ("compile_error", "runtime_error", "timeout", "invalid_input") and not report.checks:
        findings.append(Finding("does_not_run", REJECT, f"the candidate does not run: {report.message}"))
        return findings, report.to_dict(), None
    first = ev.observations.get(specs[0]["name"]) or {}
    measured = measure(first.get("work"), first.get("reference_work"), len(first.get("launches") or []))
    visible = {s["name"] for s in standard_checks()}
    own = [o.get("inputs_noncontiguous") for o in ev.observations.values()]
    measured_layout = any(own) if any(v is not None for v in own) else None
    failed, notes = robustness_split(report.failed_checks, case.reference_src, policy, measured_layout, repair)
    failed, precision = precision_split(failed, policy, repair)
    for note in precision:
        findings.append(Finding("precision", WARN, f"{note} (--policy strict rejects it)"))
    # A check whose failure is only a robustness note (a layout the task never produces) is not held
    # against the candidate either for the outputs its kernels left unwritten there (a result
    # allocated with the input's strides, the kernel writing a contiguous copy).
    demoted = {c.name for c in report.failed_checks} - {c.name for c in failed}
    for note in notes:
        findings.append(Finding("robustness", WARN, f"{note}; the task's own inputs never take this (--policy "
                                                    "strict rejects it)"))
    failed_hidden = [c for c in failed if c.name not in visible]
    failed_visible = [c for c in failed if c.name in visible]
    if failed_visible:
        findings.append(Finding("fails_evaluation", REJECT, f"fails the standard checks: {report.message}"))
    if failed_hidden:
        names = ", ".join(c.name for c in failed_hidden)
        findings.append(Finding("fails_hidden_inputs", REJECT,
                                f"passes the visible checks but fails hidden input sets the loop never saw ({names}): "
                                f"{failed_hidden[0].message or 'mismatch'}"))
    unwritten, aliased, odd_types, no_launch = [], [], set(), []
    small_reductions, torch_finished = [], []
    for name, obs in ev.observations.items():
        if name in demoted:
            continue
        if not obs.get("launches"):
            no_launch.append(name)
        out_bytes = obs.get("output_bytes") or []
        launched = obs.get("largest_launch_tensor_bytes") or 0
        derived = obs.get("derived_from_kernels") or []
        for i, (w, a) in enumerate(zip(obs.get("written_by_kernel") or [], obs.get("aliases_input") or [])):
            if a:
                aliased.append((name, i))
            elif not w:
                # Rationale: a small final reduction (a mean of per-row losses) of what the kernels wrote is
                # glue, not the operator's heavy part; the static rules judge which torch op made it.
                if launched and i < len(out_bytes) and out_bytes[i] * 8 <= launched:
                    small_reductions.append((name, i))
                elif policy == KERNELBENCH and i < len(derived) and derived[i]:
                    # KernelBench lets ModelNew keep a sub-operation in PyTorch, the last one too (a
                    # GroupNorm after a fused kernel): the output is computed from what the kernels
                    # wrote, and the measured share judges how much PyTorch did.
                    torch_finished.append((name, i))
                else:
                    unwritten.append((name, i))
        for t in obs.get("output_types") or []:
            if t not in ("Tensor", "int", "float", "bool", "NoneType", "Parameter"):
                odd_types.add(t)
    if measured is not None:
        findings.extend(judge(measured, policy))
    if no_launch and not any(f.rule == "torch_does_every_op" for f in findings):
        findings.append(Finding("no_kernel_launch", REJECT,
                                f"no Triton kernel or extension function ran during forward (checks: "
                                f"{', '.join(no_launch[:4])})"))
    if unwritten:
        findings.append(Finding("output_not_written_by_kernel", REJECT,
                                f"output {unwritten[0][1]} was not written by any custom kernel launch "
                                f"({len(unwritten)} check outputs)"))
    if torch_finished and not unwritten:
        findings.append(Finding("output_finished_by_torch", WARN,
                                f"output {torch_finished[0][1]} is computed by PyTorch from what the candidate's "
                                f"kernels wrote (a sub-operation kept in PyTorch; --policy strict rejects it)"))
    if small_reductions and not unwritten:
        findings.append(Finding("output_reduced_by_torch", WARN,
                                f"output {small_reductions[0][1]} is a small PyTorch reduction of what the kernels "
                                f"wrote"))
    if aliased:
        from debugger.integrity.reference import profile_reference

        if profile_reference(case.reference_src).returns_view:
            findings.append(Finding("output_aliases_input", WARN, f"output {aliased[0][1]} shares storage with an "
                                                                  "input, as the reference's own output does"))
        else:
            findings.append(Finding("output_aliases_input", REJECT,
                                    f"output {aliased[0][1]} shares storage with an input"))
    if odd_types:
        findings.append(Finding("tensor_subclass_output", REJECT, f"forward returns {', '.join(sorted(odd_types))}"))
    return findings, report.to_dict(), measured
