"""Scoring a benchmark run: the per-case records in, the figures (overall and per class) out.

Debug mode: a case is solved when its repair is verified (fresh checks + gate); pass@1 is
solved / cases. Regenerate mode: each case has n samples of which c are verified; pass@1 and pass@k
are the unbiased estimators 1 - C(n-c, k) / C(n, k) averaged over cases, and `repaired` counts the
cases with at least one verified sample.
"""
from __future__ import annotations

import math
from collections import defaultdict

UNLABELLED = "unlabelled"


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimator for n samples with c correct (Chen et al., 2021)."""
    if n <= 0:
        return 0.0
    k = min(k, n)
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def percentile(values: list[float], q: float) -> float | None:
    """The q-quantile (0..1) with linear interpolation; None for no values."""
    if not values:
        return None
    xs = sorted(values)
    pos = q * (len(xs) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def geomean(values: list[float]) -> float | None:
    xs = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in xs) / len(xs)) if xs else None


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def _round(v, digits: int = 4):
    return round(v, digits) if isinstance(v, float) else v


def group_scores(records: list[dict], mode: str = "debug", k: int = 1) -> dict:
    """The figures of a set of per-case records (all of them, or one class)."""
    n = len(records)
    tokens = sum(r.get("tokens", 0) for r in records)
    seconds = [r["seconds"] for r in records if r.get("seconds") is not None]
    out = {"cases": n,
           "repaired": sum(1 for r in records if r["status"] == "repaired"),
           "integrity_rejections": sum(r.get("integrity_rejections", 0) for r in records),
           "tokens": tokens,
           "median_seconds": _round(percentile(seconds, 0.5), 2),
           "p90_seconds": _round(percentile(seconds, 0.9), 2)}
    if mode == "regenerate":
        samples = sum(r.get("samples", 0) for r in records)
        verified = sum(r.get("verified_samples", 0) for r in records)
        out["pass_at_1"] = _round(_ratio(sum(pass_at_k(r.get("samples", 0), r.get("verified_samples", 0), 1)
                                             for r in records), n) or 0.0)
        out[f"pass_at_{k}"] = _round(_ratio(sum(pass_at_k(r.get("samples", 0), r.get("verified_samples", 0), k)
                                                for r in records), n) or 0.0)
        out["samples"] = samples
        out["verified_samples"] = verified
        out["tokens_per_success"] = _round(_ratio(tokens, verified), 1)
        out["compile_rate"] = _round(_ratio(sum(r.get("compiled_samples", 0) for r in records), samples))
        out["correct_rate"] = _round(_ratio(sum(r.get("correct_samples", 0) for r in records), samples))
    else:
        out["pass_at_1"] = _round(_ratio(out["repaired"], n) or 0.0)
        out["tokens_per_success"] = _round(_ratio(tokens, out["repaired"]), 1)
        out["tool_calls"] = sum(r.get("tool_calls", 0) for r in records)
        out["tool_calls_per_success"] = _round(_ratio(out["tool_calls"], out["repaired"]), 1)
        labelled = [r for r in records if r.get("true_class")]
        right = sum(1 for r in labelled if r.get("diagnosed_class") == r["true_class"])
        out["diagnosis_accuracy"] = _round(_ratio(right, len(labelled)))
        axes = [r.get("axes") or {} for r in records]
        out["compile_rate"] = _round(_ratio(sum(1 for a in axes if a.get("compiles")), n))
        out["correct_rate"] = _round(_ratio(sum(1 for a in axes if a.get("correct")), n))
        out["fixed_by_template"] = sum(1 for r in records
                                       if r["status"] == "repaired" and r.get("fixed_by") == "template")
    perf = [r["timing"] for r in records if r.get("status") == "repaired" and isinstance(r.get("timing"), dict)]
    if perf:
        out["speedup_vs_reference"] = _round(geomean([t.get("speedup_vs_reference") for t in perf]), 3)
        out["speedup_vs_fixed"] = _round(geomean([t.get("speedup_vs_fixed") for t in perf]), 3)
        out["roofline_fraction"] = _round(geomean([(t.get("roofline") or {}).get("repaired") for t in perf]), 3)
    return out


def summarize(records: list[dict], mode: str = "debug", k: int = 1) -> dict:
    """Overall figures (top level), plus `per_class` keyed by the true bug class. Skipped cases (a
    case.toml `needs` another device) count in no figure; `skipped` names them with the reason."""
    skipped = [r for r in records if r.get("status") == "skipped"]
    records = [r for r in records if r.get("status") != "skipped"]
    overall = group_scores(records, mode, k)
    overall["skipped"] = [{"name": r["name"], "reason": r.get("message", "")} for r in skipped]
    by_class: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_class[r.get("true_class") or UNLABELLED].append(r)
    overall["per_class"] = {cls: group_scores(rs, mode, k) for cls, rs in sorted(by_class.items())}
    return overall
