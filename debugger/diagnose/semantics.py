"""The faults real answers have outside the kernel: parameter_init, train_eval_mode, operator_misread.

Each is proved by a counterfactual run, not guessed from the class prior:
- parameter_init: the kernel checks on the task's own inputs (Model's weights mapped into ModelNew)
  pass while KernelBench's trials (each model's own initialisation under seed 42) fail, and the
  correspondence names the tensors ModelNew builds differently. When the kernel fails on the task's
  own inputs too, differing tensors are a second finding, weighed lightly.
- train_eval_mode: the failing checks pass when both models run in eval mode (BatchNorm with its
  running statistics, dropout off): the candidate implements inference semantics while the harness,
  like KernelBench's, runs in train mode.
- operator_misread: right shapes, wrong values nearly everywhere, no kernel-level experiment that
  fixes it, and the candidate says it simplifies, skips or approximates part of the operator.
"""
from __future__ import annotations

import math
import re

from debugger.case import Case
from debugger.diagnose.ranking import strong_cuda_facts
from debugger.recipes.dropped_term import dropped_terms

TRAIN_EVAL_HINT = re.compile(r"BatchNorm|InstanceNorm|Dropout|\.training\b|F\.batch_norm|F\.dropout|running_mean")
SIMPLIFIED = re.compile(
    r"for simplicity|simplif(?:y|ied|ies|ication)|placeholder|not (?:yet )?implemented|approximat|"
    r"\bskip(?:s|ped|ping)?\b|\bomit(?:s|ted|ting)?\b|\bignor(?:e|es|ed|ing)\b|\bassum(?:e|es|ed|ing)\b|"
    r"\bTODO\b|\bhack\b|not (?:handled|supported)|only (?:handles?|supports?)", re.I)
COMMENT = re.compile(r"#[^\n]*|//[^\n]*|/\*.*?\*/|\"\"\".*?\"\"\"|'''.*?'''", re.S)


def differing_parameters(report) -> list[dict]:
    """Matched tensors whose own initialisation differs from Model's under the same seed."""
    pairs = (report.parameter_map or {}).get("pairs", [])
    return [p for p in pairs if (p.get("own_init_diff") or 0.0) > 0.0]


def seeds_error_within_pipeline_tolerance(report) -> float | None:
    """Under KernelBench's semantics, when the task's own inputs (the seeds, Model's weights mapped in)
    ran and every output is within KernelBench's tolerance, though kdebug's tighter one may fail them (a
    cuBLAS summation order, say): their largest error. Else None."""
    if report.semantics != "kernelbench":
        return None
    from debugger.compare import KERNELBENCH_TOLERANCE

    tol = next((c.spec.get("kb_tolerance") for c in report.checks if c.kind == "kernelbench" and c.spec
                and c.spec.get("kb_tolerance") is not None), KERNELBENCH_TOLERANCE)
    outputs = []
    for c in report.checks:
        if c.kind == "seed" and c.status != "skipped":
            if not c.outputs:
                return None
            outputs += c.outputs
    if not outputs or not all(o.problem is None and not o.nan_mismatch and not o.inf_mismatch
                              and o.max_abs_err is not None and o.max_abs_err <= tol for o in outputs):
        return None
    return max(o.max_abs_err for o in outputs)


def parameter_init_hypothesis(report) -> dict | None:
    """parameter_init, with the tensors and the run that proves it (None without evidence)."""
    from debugger.evaluate import seeds_pass

    differ = differing_parameters(report)
    kernel = report.verdicts.get("kernel", {}).get("status")
    pipeline = report.verdicts.get("kernelbench", {}).get("status")
    passes = kernel == "pass" or seeds_pass(report)
    within = None if passes else seeds_error_within_pipeline_tolerance(report)  # the seeds' largest error
    right_on_task = passes or within is not None
    if not differ and not (kernel == "pass" and pipeline not in (None, "pass")):
        return None
    evidence = [f"ModelNew's {p['candidate']} (Model's {p['reference']}, {'held with dims 0 and 1 swapped' if p['by'] == 'transposed' else 'matched by ' + p['by']}) starts "
                f"{p['own_init_diff']:.3g} away from Model's under the same seed" for p in differ[:8]]
    unmatched = (report.parameter_map or {}).get("unmatched_reference", [])
    if unmatched:
        evidence.append(f"Model's {', '.join(unmatched[:6])} matched no tensor of ModelNew")
    if right_on_task and pipeline not in (None, "pass") and (differ or kernel == "pass"):
        which = ("every kernel check passes" if kernel == "pass" else
                 "the task's own inputs (the seeds) are within KernelBench's tolerance" if within is not None else
                 "the task's own inputs (the seeds) pass")
        evidence.insert(0, f"experiment: with Model's weights mapped in {which}; with ModelNew's own "
                           "initialisation KernelBench's trials fail")
        if within is not None:
            evidence.insert(1, f"the seeds miss kdebug's own tolerance (max abs error {within:.3g}): a second, "
                               "smaller finding, inside what the pipeline accepts")
        score = 9.0
    else:
        score = 1.0
    tags = ["kernelbench_fails"] + (["kernel_passes"] if right_on_task else [])
    return {"bug_class": "parameter_init", "score": score, "evidence": evidence, "lines": [],
            "recipes": ["parameter_init"], "tags": tags}


def needs_eval_mode_experiment(case: Case) -> bool:
    """The reference or the candidate has train/eval-dependent behaviour worth the experiment."""
    return bool(TRAIN_EVAL_HINT.search(case.reference_src) or TRAIN_EVAL_HINT.search(case.candidate_src))


def eval_mode_experiment(case: Case, report, device: str, timeout: float) -> dict | None:
    """Re-run the failing kernel checks with both models in eval mode; the experiment record."""
    from debugger.evaluate import run_evaluation

    failing = [c for c in report.failed_checks if c.kind != "kernelbench" and c.spec]
    if not failing or not needs_eval_mode_experiment(case):
        return None
    specs = [dict(c.spec, eval_mode=True) for c in failing[:4]]
    rerun = run_evaluation(case, device, checks=specs, timeout=timeout).report
    before, after = _largest_error(failing[:4]), _largest_error(rerun.checks)
    # A second fault that only eval mode shows (a bias the batch mean cancels in train mode) keeps the checks
    # failing; an error that falls by an order of magnitude still says the statistics are most of it.
    shrinks = rerun.status == "mismatch" and before and after is not None and after <= before * ERROR_SHRINK
    result = "fixed" if rerun.passed else (
        "better" if len(rerun.failed_checks) < len(specs) or shrinks else "no_change")
    shrunk = f"; the largest error falls from {before:.3g} to {after:.3g}" if shrinks else ""
    return {"recipe": "eval_mode", "bug_class": "train_eval_mode", "result": result, "lines": [],
            "description": f"both models in eval mode on {len(specs)} failing checks ({rerun.status}{shrunk})",
            "failed_after": [c.name for c in rerun.failed_checks]}


ERROR_SHRINK = 0.1


def _largest_error(checks) -> float | None:
    """The largest absolute error over checks that ran to a comparison (None if one did not)."""
    errs = [c.max_abs_err for c in checks]
    if not errs or any(e is None or not math.isfinite(e) for e in errs):
        return None
    return max(errs)


def simplification_lines(src: str) -> list[tuple[int, str]]:
    """(line, text) of comments and docstrings where the candidate says it simplifies or skips."""
    found = []
    for m in COMMENT.finditer(src):
        text = m.group(0)
        hit = SIMPLIFIED.search(text)
        if hit:
            line = src.count("\n", 0, m.start() + hit.start()) + 1
            snippet = text.strip().splitlines()
            found.append((line, (snippet[0] if snippet else text)[:120]))
    return found


def operator_misread_hypothesis(case: Case, report, tags: set[str], experiments: list[dict]) -> dict | None:
    """operator_misread when values are wrong nearly everywhere with no kernel-level fix, weighed up
    by the candidate's own words that it simplifies or skips part of the operator."""
    failed = [c for c in report.failed_checks if c.kind != "kernelbench"]
    if not failed or any(e["result"] == "fixed" for e in experiments):
        return None
    widespread = sum(1 for c in failed if (c.frac_wrong or 0) > 0.5) >= max(1, len(failed) // 2)
    if not widespread or "never_written" in tags:
        return None
    said = simplification_lines(case.candidate_src)
    evidence = [f"{len(failed)} checks wrong on most elements, and no kernel-level experiment fixes them"]
    score = 1.5
    if said:
        score += 3.0
        evidence += [f"line {n}: the candidate says: {text}" for n, text in said[:4]]
    # Without the candidate's words it is the class of no kernel-level evidence: where the CUDA source shows a
    # located fault (a block capped below the row, running statistics read), it backs no lead of its own.
    located = [] if said else strong_cuda_facts(tags)
    dropped = dropped_terms(case.reference_src, report.parameter_map)
    if dropped:  # a term of the operator ModelNew never holds: evidence of its own, whatever else the source shows
        score += 3.0
        evidence += [f"Model's {t.term}, added right after {t.layer}, matched no tensor of ModelNew: the kernel is "
                     f"handed {t.bias} alone" for t in dropped[:4]]
        located = []
    if located:
        evidence.append(f"the CUDA source shows a located fault ({', '.join(located)}): no support of its own")
    return {"bug_class": "operator_misread", "score": score, "evidence": evidence, "supported": not located,
            "lines": [n for n, _ in said[:4]], "recipes": ["dropped_term"] if dropped else [],
            "tags": (["says_simplified"] if said else []) + (["dropped_term"] if dropped else [])}
