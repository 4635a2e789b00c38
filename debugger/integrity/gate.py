"""The integrity verdict: static rules plus the dynamic run; any reject finding rejects.

Policy (also in the README and policy.py): under `kernelbench` (the default) PyTorch may keep whole
sub-operations of the reference but the candidate's kernels must do a real part of the work, with no
cheat; under `strict` the operator's heavy part must be in the candidate's kernels. tf32 in tl.dot for
float32 tasks is accepted unless strict_precision; casting a float32 task's operands to fp16/bf16 is
rejected; outputs must be written by the candidate's own kernels and must match on hidden inputs and
shapes the repair loop never used (under kernelbench a size the task never takes is a robustness note, except
for a repair: dynamic.robustness_split). With `baseline_src` (the candidate a repair came from) the repair
may not add PyTorch compute, fallbacks, special cases or precision loss (relative.py), and is not rejected
for PyTorch compute its candidate already had (a warning: INHERITABLE). PyTorch compute is
judged by its share of the work measured on the run (work.py) when the gate runs the candidate, and by
the source in the static-only mode.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from debugger.case import Case
from debugger.evaluate import cuda_blocked_on_cpu
from debugger.gpu_memory import says_out_of_memory
from debugger.integrity.dynamic import judge_run, run_checks
from debugger.integrity.findings import REJECT, WARN, Finding
from debugger.integrity.policy import DEFAULT_POLICY, POLICIES, STRICT, check_policy
from debugger.integrity.relative import regressions
from debugger.integrity.static import static_findings
from debugger.source.host import SourceModule


@dataclass
class Verdict:
    """accept | reject, with every finding (rule, severity, message, line)."""

    verdict: str
    findings: list[Finding] = field(default_factory=list)
    evaluation: dict | None = None
    policy: str = DEFAULT_POLICY
    torch_work: dict | None = None  # PyTorch's measured share of the work and its top ops (work.py)
    # why the sandboxed run did not happen (a CUDA candidate on the CPU) or is incomplete (checks crowded out of
    # the GPU by other processes): an accept with it is incomplete (`kdebug check` exits 2)
    dynamic_not_run: str | None = None

    @property
    def accepted(self) -> bool:
        return self.verdict == "accept"

    def to_dict(self) -> dict:
        out = {"verdict": self.verdict, "policy": self.policy, "findings": [f.to_dict() for f in self.findings],
               "torch_work": self.torch_work, "evaluation": self.evaluation}
        if self.dynamic_not_run:
            out["dynamic_not_run"] = self.dynamic_not_run
        return out

    def reasons(self) -> list[str]:
        return [f"{f.rule}: {f.message}" for f in self.findings if f.severity == REJECT]


# Where the work is done is the candidate's design, which a repair keeps: a repair is judged against the
# candidate it came from (repair_adds_torch_compute rejects PyTorch compute it adds), not rejected for what
# the candidate already computed with PyTorch. Cheats (reference calls, cached outputs, special cases)
# reject whoever wrote them.
INHERITABLE = {"torch_compute"}


def _inherited_as_warnings(findings: list[Finding], baseline_src: str, reference_src: str,
                           strict_precision: bool, policy: str) -> list[Finding]:
    before = {f.rule for f in static_findings(baseline_src, reference_src, strict_precision=strict_precision,
                                              policy=policy, measured=None) if f.severity == REJECT}
    return [Finding(f.rule, WARN, f"{f.message} (inherited: the candidate the repair came from does this too)",
                    f.line) if f.severity == REJECT and f.rule in INHERITABLE and f.rule in before else f
            for f in findings]


def incomplete_accept(check_json: dict) -> str | None:
    """Why an accept in `kdebug check --json`'s output is incomplete (the dynamic checks not run, or crowded out
    of the GPU: the command exits 2 for it), or None."""
    return check_json.get("dynamic_not_run") if check_json.get("verdict") == "accept" else None


def _crowded_checks(evaluation: dict | None) -> str | None:
    """Why the dynamic run is incomplete, where checks could not run for want of GPU memory (others' processes
    held it): an accept without them is no accept (never a silent skip), a run on a GPU of its own decides."""
    checks = (evaluation or {}).get("checks") or []
    lost = [c for c in checks if c.get("status") == "skipped" and says_out_of_memory(c.get("message"))]
    if not lost:
        return None
    return (f"{len(lost)} of {len(checks)} dynamic checks could not run for GPU memory (first: {lost[0].get('name')}: "
            f"{(lost[0].get('message') or '')[:200]})")


def check(case: Case, device: str = "cpu", *, strict_precision: bool = False, dynamic: bool = True,
          timeout: float = 120.0, full: bool = True, policy: str = STRICT,
          baseline_src: str | None = None, sizes: str = "published") -> Verdict:
    """Run the gate on a candidate: the sandboxed run (which measures PyTorch's share of the work), then the
    static rules, which leave that judgement to the measurement when there is one. `baseline_src`: the
    candidate a repair came from, against which the repair is judged too. Callers that name no policy
    (the repair loop, record_fix) get strict: without a baseline, kernelbench would let a repair move
    a whole layer into PyTorch; `kdebug check` and the MCP tool default to kernelbench. `sizes`: the
    evaluation's sizes (published, small or auto; debugger/sizes.py)."""
    policy = check_policy(policy)
    return check_policies(case, device, (policy,), strict_precision=strict_precision, dynamic=dynamic,
                          timeout=timeout, full=full, baseline_src=baseline_src, sizes=sizes)[policy]


def check_policies(case: Case, device: str = "cpu", policies: tuple[str, ...] = POLICIES, *,
                   strict_precision: bool = False, dynamic: bool = True, timeout: float = 120.0, full: bool = True,
                   baseline_src: str | None = None, sizes: str = "published") -> dict[str, Verdict]:
    """The gate under each policy, from one sandboxed run: the run does not depend on the policy, only what
    is made of it (calibrating both policies on real answers cost two runs of every answer before)."""
    policies = tuple(check_policy(p) for p in policies)
    blocked = cuda_blocked_on_cpu(case.candidate_src) if dynamic and device == "cpu" else None
    run = not_run = None
    if blocked:  # code that cannot run here is judged by the static rules alone, never rejected for not running
        not_run = f"the dynamic checks were not run: {blocked}; the static rules alone judged it"
    elif dynamic and not SourceModule(case.candidate_src).has_error:
        run = run_checks(case, device, timeout=timeout, full=full, sizes=sizes)
    repair = baseline_src not in (None, case.candidate_src)
    verdicts = {}
    for policy in policies:
        evaluation = measured = None
        dyn: list[Finding] = []
        if run is not None:
            dyn, evaluation, measured = judge_run(case, run, policy, repair)
            not_run = _crowded_checks(evaluation)
        # The static rules judge PyTorch compute from the source only where the run measured none (work.py).
        findings = list(static_findings(case.candidate_src, case.reference_src, strict_precision=strict_precision,
                                        policy=policy, measured=measured))
        findings.extend(dyn)
        if repair:
            findings = _inherited_as_warnings(findings, baseline_src, case.reference_src, strict_precision, policy)
            findings.extend(regressions(baseline_src, case.candidate_src, case.reference_src, policy))
        verdict = "reject" if any(f.severity == REJECT for f in findings) else "accept"
        verdicts[policy] = Verdict(verdict, findings, evaluation, policy,
                                   measured.summary() if measured is not None else None, not_run)
    return verdicts
