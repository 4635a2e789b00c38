"""Experiments: the strongest evidence is a counterfactual. Apply a located recipe's patch to a copy
of the candidate and re-run only the failing checks in the sandbox; a patch that makes them pass
names the root cause (and the line) with near certainty. The candidate's file is never touched.
"""
from __future__ import annotations

import time

from debugger.case import Case
from debugger.evaluate import evaluate
from debugger.recipes import sibling_ranks
from debugger.source.edits import source_hash


def failing_specs(report) -> list[dict]:
    """The specs of the checks that failed (what an experiment must turn green)."""
    return [dict(c.spec) for c in report.failed_checks if c.spec]


def _mostly_wrong(rep) -> bool:
    """Every check the evaluation ran fails, each with most of its output wrong."""
    failing = rep.failed_checks
    return rep.status == "mismatch" and bool(failing) and not any(c.passed and rep.counts(c) for c in rep.checks) \
        and all(c.status == "mismatch" and (c.frac_wrong or 0.0) > 0.5 for c in failing)


def run_experiments(case: Case, report, patches: list, order: list[str], *, device: str, budget: int = 6,
                    timeout: float = 60.0, seconds: float | None = None,
                    scores: dict[str, float] | None = None) -> list[dict]:
    """Try up to `budget` patches, classes in `order` first, round-robin over the recipes of classes
    whose `scores` tie (all of them without scores); stop at the first that fixes everything, or once
    `seconds` have gone (a slow candidate must not spend minutes on guesses)."""
    specs = failing_specs(report)
    if not specs or budget <= 0:
        return []
    baseline = len(specs)
    rank = {cls: i for i, cls in enumerate(order)}
    # Among classes the evidence cannot tell apart, every recipe's first patch before any recipe's
    # second: a budget of three must not go to three sites of one recipe (depthwise_conv's three mask
    # bounds starved its bias index at the same score); a class that scores higher keeps its variants
    # first (reverse_cumsum's third scan_inclusive before a hardening int64_offsets).
    tier = [-round((scores or {}).get(p.bug_class, 0.0), 3) for p in patches]
    keys = sorted(zip(tier, sibling_ranks(patches), (rank.get(p.bug_class, len(rank)) for p in patches),
                      range(len(patches))))
    queue = [patches[i] for *_, i in keys]
    results = []
    seen = set()
    t0 = time.monotonic()
    for patch in queue:
        if len(results) >= budget or (seconds is not None and results and time.monotonic() - t0 > seconds):
            break
        if patch.new_src in seen:
            continue
        seen.add(patch.new_src)
        rep = evaluate(case.with_candidate(patch.new_src), device, checks=specs, timeout=timeout)
        failed = len(rep.failed_checks)
        # fewer failing checks is better, also when one of those left raises (a second fault)
        result = "fixed" if rep.status == "pass" else \
            "better" if (rep.status in ("mismatch", "runtime_error") and failed < baseline) \
            else "no_change" if failed == baseline and rep.status == report.status else "worse"
        results.append({"recipe": patch.recipe, "bug_class": patch.bug_class, "description": patch.description,
                        "lines": patch.sites, "result": result, "status": rep.status,
                        # every check it ran still fails on most of the output (a compile fix that lets a
                        # kernel run which computes little of it): "better" says nothing of coverage
                        "mostly_wrong": _mostly_wrong(rep),
                        "message": (rep.message or "")[:400],
                        # what was patched and into what: the repair loop need not screen this patch again
                        "base_hash": source_hash(case.candidate_src), "patch_hash": source_hash(patch.new_src)})
        if result == "fixed":
            break
    return results
