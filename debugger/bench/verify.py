"""Independent verification of a repaired (or regenerated) kernel: fresh checks, then the gate.

The repair loop's own verdict is not trusted: the output is evaluated again on the standard checks
plus seeds the loop never drew, and then put through the integrity gate (which adds hidden shapes).
A repair counts only when both pass with every check run: a check skipped for any reason but "does not
apply" (memory, time, a worker that died) leaves it `unverified`. Compile, correctness and integrity
are kept as separate axes.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

from debugger.case import Case
from debugger.evaluate import evaluate, standard_checks

BENCH_SEEDS = (7919, 104729)  # not used by the loop, the gate or the standard checks


def fresh_checks() -> list[dict]:
    """The standard checks plus bench-only seeds and a negative scaling (other shapes: the gate's)."""
    specs = standard_checks()
    specs += [{"name": f"bench_seed{s}", "kind": "hidden", "seed": s, "init_seed": 3 + i}
              for i, s in enumerate(BENCH_SEEDS)]
    specs.append({"name": "bench_x5neg", "kind": "hidden", "seed": 6007, "transform": "scale:-5"})
    return specs


@dataclass
class Verification:
    """The axes of one kernel: compiles, correct on fresh checks, accepted by the gate."""

    compiles: bool
    correct: bool
    eval_status: str
    eval_message: str = ""
    gate: str | None = None  # accept | reject | None (not run: the kernel is not correct)
    gate_reasons: list[str] = field(default_factory=list)
    seconds: float = 0.0
    skipped: dict = field(default_factory=dict)  # check -> why it did not run (fresh checks and the gate's)
    ran_clean: bool = False  # every check that ran passed

    @property
    def verified(self) -> bool:
        return self.correct and self.gate == "accept" and not self.skipped

    @property
    def unverified(self) -> bool:
        """Nothing that ran failed and the gate did not reject, but some checks did not run."""
        return bool(self.skipped) and self.ran_clean and self.gate != "reject"

    def to_dict(self) -> dict:
        return {**asdict(self), "verified": self.verified, "unverified": self.unverified}


def skipped_checks(evaluation: dict | None) -> dict[str, str]:
    """The checks of an evaluation summary that did not run, for a reason other than "does not apply"."""
    return {c["name"]: c.get("message", "") for c in (evaluation or {}).get("checks", [])
            if c.get("status") == "skipped" and not c.get("not_applicable")}


def verify_source(case: Case, src: str, device: str, *, timeout: float = 120.0, gate: bool = True,
                  fail_fast: bool = False) -> Verification:
    """Evaluate `src` as the case's candidate on fresh checks; gate it if it is correct."""
    from debugger.integrity.gate import check

    t0 = time.perf_counter()
    subject = case.with_candidate(src)
    report = evaluate(subject, device, checks=fresh_checks(), timeout=timeout,
                      fail_fast=fail_fast)
    result = Verification(compiles=report.status != "compile_error", correct=report.passed,
                          eval_status=report.status, eval_message=report.message,
                          skipped=skipped_checks(report.to_dict()))
    result.ran_clean = bool(report.checks) and not report.failed_checks and report.status != "compile_error"
    if result.ran_clean and gate:
        # The standard checks just ran above, so the gate adds only its seeded and hidden runs.
        verdict = check(subject, device, timeout=timeout, full=False)
        result.gate = verdict.verdict
        result.gate_reasons = verdict.reasons()
        result.skipped.update(skipped_checks(verdict.evaluation))
    result.seconds = time.perf_counter() - t0
    return result
