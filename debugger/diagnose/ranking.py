"""Ranking root-cause hypotheses: an additive score per bug class over the observed evidence.

Evidence comes as tags (error map, dependence, probes, static facts), as recipe sites (a located bug
shape of some class), as operator families of the reference (a scan bug needs a scan), and as
experiments (a recipe's patch that makes the failing checks pass). Scores become confidences
through a softmax; the weights are written down here, where a person can read and tune them. A class
is `supported` when the run itself backs it (run tags, an experiment, a finding) or the source
contradicts itself where one of its recipes looks; the ranking follows that evidence: no
unsupported class leads a supported one.
"""
from __future__ import annotations

import math

from debugger.settings import bug_classes
from debugger.symptoms import DEPENDENCE, ERROR_MAP, MAGNITUDE, PROBES

# class -> {evidence tag: weight}
WEIGHTS: dict[str, dict[str, float]] = {
    "mask_missing": {"tail_block_wrong": 2.5, "unmasked_load": 1.0, "unmasked_store": 1.0, "masked_lane_store": 2.0,
                     "out_of_bounds_load": 2.0, "nan_in_output": 0.5, "fails_other_shapes": 0.5, "sparse_wrong": 0.5,
                     "memory_fault": 2.5, "prefix_written": 0.8},
    "grid_undercount": {"never_written": 1.5, "floor_div_grid": 3.0, "programs_missing": 1.5, "tail_block_wrong": 1.0,
                        "zero_programs": 1.5},
    "unwritten_output": {"never_written": 2.5, "programs_missing": 1.0, "periodic_errors": 0.5,
                         "whole_rows_wrong": 0.5, "whole_cols_wrong": 0.5, "buffer_mostly_unwritten": 1.0},
    "masked_fill_value": {"other_zero_before_max": 2.0, "fails_negative_inputs": 2.5, "constant_factor": 0.3,
                          "whole_rows_wrong": 0.3, "precision_noise": 0.3},
    "stride_layout": {"fails_noncontiguous": 4.0, "transposed": 1.0, "hardcoded_stride": 0.5},
    "low_precision_accumulator": {"precision_noise": 1.0, "low_precision_accumulator": 3.0,
                                  "fails_large_magnitude": 0.3},
    "numerical_overflow": {"fails_large_magnitude": 2.5, "nan_in_output": 1.0, "inf_in_output": 1.0,
                           "no_max_subtraction": 2.0},
    "normalization_formula": {"divides_by_block": 2.5, "constant_factor": 1.0, "all_wrong": 0.5,
                              "precision_noise": 0.5, "offset_error": 0.5, "family:norm": 1.5},
    "k_loop_tail": {"family:matmul": 0.8, "family:conv": 0.5, "unmasked_load": 0.8, "tail_block_wrong": 0.5,
                    "all_wrong": 0.3, "nan_in_output": 0.5, "memory_fault": 0.8},
    "pointer_advance": {"loop_pointer_not_advanced": 3.0, "all_wrong": 0.5, "large_error": 0.3, "memory_fault": 0.3},
    "broadcast_axis": {"fails_param_redraw": 2.0, "periodic_errors": 0.8, "whole_cols_wrong": 0.5,
                       "whole_rows_wrong": 0.5},
    "write_race": {"run_to_run_drift": 2.5, "store_without_atomic": 2.5, "programs_overlap": 2.5},
    "scan_semantics": {"family:scan": 2.0, "shifted_by_one": 2.5, "periodic_errors": 0.5, "tail_block_wrong": 0.3},
    "program_id_axis": {"transposed": 1.0, "whole_rows_wrong": 0.5, "whole_cols_wrong": 0.5, "one_tile_wrong": 0.5},
    "activation_formula": {"family:activation": 1.5, "precision_noise": 0.8, "fails_negative_inputs": 0.8,
                           "sign_flip": 0.8, "offset_error": 0.5, "all_wrong": 0.3},
    "index_overflow": {"int32_offsets": 0.2, "fails_other_shapes": 0.5},
    "dtype_cast": {"dtype_mismatch": 4.0, "precision_noise": 0.3},
    "reduction_axis": {"block_smaller_than_row": 2.5, "family:reduction": 0.5, "family:softmax": 0.3,
                       "constant_factor": 0.3, "tail_block_wrong": 0.3},
    "other": {},
}
# CUDA static facts (debugger/lang/cuda), weighed like their Triton counterparts.
for _cls, _tag, _w in (
        ("mask_missing", "cuda_unguarded_load", 1.0), ("mask_missing", "cuda_unguarded_store", 1.0),
        ("grid_undercount", "cuda_floor_div_grid", 3.0), ("grid_undercount", "cuda_grid_capped", 2.5),
        ("grid_undercount", "cuda_grid_axis_single", 3.0),
        ("reduction_axis", "cuda_block_capped", 2.0), ("reduction_axis", "cuda_block_smaller_than_row", 2.5),
        ("reduction_axis", "cuda_partials_not_combined", 2.5), ("write_race", "cuda_block_partials_race", 2.5),
        ("write_race", "cuda_shared_no_sync", 2.0), ("unwritten_output", "cuda_index_divided_in_place", 3.0),
        ("unwritten_output", "cuda_atomic_uninitialised_output", 2.0),
        ("unwritten_output", "cuda_guard_on_fused_axis", 3.0), ("grid_undercount", "cuda_index_fixed_at_zero", 3.0),
        ("low_precision_accumulator", "cuda_half_accumulator", 3.0), ("index_overflow", "cuda_int32_index", 0.3),
        ("train_eval_mode", "cuda_reads_running_stats", 2.5),
        ("operator_misread", "cuda_transposed_taps_flipped", 3.0),
        # right where the weight is declared (out, in, k...) and given the reference's values transposed
        ("operator_misread", "cuda_transposed_weight_out_major", 1.0),
        # right only for count_include_pad=False, which no KernelBench problem sets
        ("operator_misread", "cuda_avgpool_counts_valid", 1.5),
        ("scan_semantics", "cuda_block_scan_no_carry", 3.0), ("scan_semantics", "cuda_carry_in_one_thread", 3.0)):
    WEIGHTS.setdefault(_cls, {})[_tag] = _w

# Classes whose bug needs an operation of the reference to live in: a normalisation formula needs a
# normalisation, a reduction or a softmax to get wrong. Without one, the run's tags (a constant factor,
# every element wrong) say nothing for the class (a transposed convolution's taps misread showed both).
NEEDS_FAMILY = {"normalization_formula": {"norm", "reduction", "softmax"}}

# How much a located recipe site of a class counts, by recipe (generic recipes count less).
# (variance_biased, scan_inclusive, int64_offsets, contiguous_inputs and gelu_variant also propose on
# honest code, where the reference decides or the edit only hardens: little weight.)
RECIPE_SITE_WEIGHT = {"int64_offsets": 0.1, "contiguous_inputs": 0.3, "mask_padded_lanes": 0.5,
                      "activation_constant": 1.5, "scan_inclusive": 0.3, "output_dtype": 0.8,
                      "variance_biased": 0.3, "gelu_variant": 0.3}
DEFAULT_SITE_WEIGHT = 1.0
EXPERIMENT_FIXED = 8.0    # a patch of this class made every failing check pass
EXPERIMENT_BETTER = 2.0   # a patch of this class reduced the failures
TEMPERATURE = 1.5
SUPPORT_MIN = 0.8         # run-evidence weight that supports a class on its own
# Recipes that locate a site only where the source contradicts itself (a stride stepping the axis the
# host names otherwise, a dot operand whose K sits on the wrong axis, a mask bounded by a stride):
# such a site is evidence of its own, not the shape of a usual bug.
CONTRADICTION_SITES = {"swap_strides", "dot_operand_transpose", "mask_bound_numel"}
# Tags nearly every wrong kernel shows: they say the output is wrong, not why.
GENERIC_TAGS = {"all_wrong", "large_error", "nan_in_output", "inf_in_output", "raises_exception"}
UNWRITTEN_CLASSES = ("grid_undercount", "unwritten_output", "mask_missing", "program_id_axis")
# Tags observed in the run itself (not the source, not the reference's family).
RUN_TAGS = set(ERROR_MAP) | set(MAGNITUDE) | set(DEPENDENCE) | set(PROBES) | {"dtype_mismatch"}


def score_classes(tags: set[str], sites: list[dict], experiments: list[dict],
                  findings: list[dict] | None = None) -> dict[str, dict]:
    """Per class: score and the evidence that contributed. `findings` are scored hypotheses built
    elsewhere from their own counterfactual runs (diagnose/semantics.py: parameter_init...)."""
    out: dict[str, dict] = {c: {"score": 0.0, "evidence": [], "lines": set(), "recipes": []} for c in bug_classes()}
    for cls, weights in WEIGHTS.items():
        if cls not in out or (cls in NEEDS_FAMILY and not any(f"family:{f}" in tags for f in NEEDS_FAMILY[cls])):
            continue
        for tag, w in weights.items():
            if tag in tags:
                out[cls]["score"] += w
                out[cls]["evidence"].append(tag)
    seen = set()
    for site in sites:
        cls = site["bug_class"]
        if cls not in out or (cls, site["recipe"]) in seen:
            continue
        seen.add((cls, site["recipe"]))
        out[cls]["score"] += RECIPE_SITE_WEIGHT.get(site["recipe"], DEFAULT_SITE_WEIGHT)
        out[cls]["evidence"].append(f"recipe {site['recipe']} locates a site: {site['description']}")
        out[cls]["lines"].update(site.get("lines") or [])
        out[cls]["recipes"].append(site["recipe"])
    for exp in experiments:
        cls = exp["bug_class"]
        if cls not in out:
            continue
        if exp["result"] == "fixed":
            out[cls]["score"] += EXPERIMENT_FIXED
            out[cls]["evidence"].append(f"experiment: {exp['description']} makes every failing check pass")
        elif exp["result"] == "better":
            out[cls]["score"] += EXPERIMENT_BETTER
            out[cls]["evidence"].append(f"experiment: {exp['description']} reduces the failures")
        out[cls]["lines"].update(exp.get("lines") or [])
    for f in findings or []:
        if f["bug_class"] in out:
            entry = out[f["bug_class"]]
            entry["score"] += f["score"]
            entry["evidence"].extend(f["evidence"])
            entry["lines"].update(f.get("lines") or [])
            entry["recipes"].extend(r for r in f.get("recipes", []) if r not in entry["recipes"])
    return out


STRONG_FACT = 2.0  # a CUDA static fact weighing this much for some class locates a fault in the kernel


def strong_cuda_facts(tags: set[str]) -> list[str]:
    """The CUDA static facts among `tags` that locate a fault of a kernel class on their own."""
    return sorted(t for t in tags if t.startswith("cuda_")
                  and any(w.get(t, 0.0) >= STRONG_FACT for w in WEIGHTS.values()))


def run_support(cls: str, tags: set[str]) -> float:
    """The weight of the tags observed in the run (error maps, dependence, probes) for a class:
    the part of its score that is not the source's shape or the operator's family."""
    return sum(w for t, w in WEIGHTS.get(cls, {}).items() if t in tags and t in RUN_TAGS and t not in GENERIC_TAGS)


def _follow_the_evidence(scored: dict, tags: set[str], experiments: list[dict], findings,
                         sites: list[dict] = ()) -> None:
    """Mark each class supported when the run backs it (tags of the run weighing SUPPORT_MIN, an
    experiment that fixed or reduced the failures, a finding of its own), and keep every
    unsupported class below the best supported one: a class resting only on the prior, the
    operator's family or the source's shape must not lead."""
    tried = {e["bug_class"] for e in experiments if e.get("result") in ("fixed", "better")}
    found = {f["bug_class"] for f in findings or [] if f.get("supported", True)}
    found |= {site["bug_class"] for site in sites if site.get("recipe") in CONTRADICTION_SITES}
    if "never_written" in tags:  # poisoned elements back every class whose bug leaves elements unwritten
        found |= set(UNWRITTEN_CLASSES)
    for cls, v in scored.items():
        v["raw_score"] = v["score"]
        v["supported"] = cls in tried or cls in found or run_support(cls, tags) >= SUPPORT_MIN
    best = max((v["score"] for v in scored.values() if v["supported"]), default=None)
    if best is None:
        return
    for v in scored.values():
        if not v["supported"] and v["score"] >= best:
            v["score"] = max(0.0, best - 0.5)


def rank(tags: set[str], sites: list[dict], experiments: list[dict], top: int = 5,
         findings: list[dict] | None = None) -> list[dict]:
    """Hypotheses, most likely first: {bug_class, confidence, score, evidence, lines, recipes}."""
    scored = score_classes(tags, sites, experiments, findings)
    if all(v["score"] == 0 for v in scored.values()):
        scored["other"]["score"] = 1.0
        scored["other"]["evidence"].append("no evidence matches a known class")
    _follow_the_evidence(scored, tags, experiments, findings, sites)
    items = sorted(scored.items(), key=lambda kv: (-kv[1]["supported"], -kv[1]["score"]))
    zs = [math.exp(v["score"] / TEMPERATURE) for _, v in items]
    total = sum(zs)
    hyps = []
    for (cls, v), z in zip(items[:top], zs[:top]):
        if v["score"] <= 0 and hyps:
            break
        hyps.append({"bug_class": cls, "confidence": round(z / total, 3), "score": round(v["score"], 2),
                     "evidence": v["evidence"], "lines": sorted(v["lines"]), "recipes": v["recipes"],
                     "supported": bool(v["supported"]), "raw_score": round(v.get("raw_score", v["score"]), 2)})
    return hyps


def cite_static_facts(hypotheses: list[dict], static: list[dict], per_tag: int = 2) -> None:
    """A hypothesis whose score counts a CUDA static fact cites it (its line and what it says) in place of
    the bare tag, so the class comes with the line of the CUDA source that backs it. (A Triton fact's line
    is a recipe site's already, where the kb backend's ordering by hypothesis lines was measured.)"""
    by_tag: dict[str, list[dict]] = {}
    for f in static:
        if f.get("language") == "cuda":
            by_tag.setdefault(f["tag"], []).append(f)
    for h in hypotheses:
        evidence = []
        for e in h["evidence"]:
            facts = by_tag.get(e, [])[:per_tag]
            evidence += [f"line {f['line']}: {f['message']}" for f in facts] or [e]
            h["lines"] = sorted(set(h["lines"]) | {f["line"] for f in facts if f.get("line")})
        h["evidence"] = evidence
