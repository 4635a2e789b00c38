"""Fix recipes on real kernels.

Each buggy case under tests/data/recipes/<case>/ (candidate.py + a KernelBench reference.py) fails the
project's full-coverage evaluation on the Triton CPU interpreter (debugger.evaluate: several seeds,
x100 / x0.01 / negated inputs, non-contiguous and transposed layouts, re-drawn parameters), and one
of the recipe's patches passes it. Recipes leave the honest kernels under tests/data/recipes/correct/
alone where they do not apply, propose nothing for source that does not parse, and only emit
parseable candidates.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from debugger import recipes
from debugger.recipes import RECIPES, Patch, get
from debugger.source.tree import parses

DATA = Path(__file__).parent / "data" / "recipes"
REPO = Path(__file__).resolve().parents[1]
CHECK = DATA / "_check.py"

# case folder -> (recipe id, tolerances for the evaluation when the per-dtype defaults do not fit)
CASES = {
    "add_mask_elementwise": ("add_mask", {}),
    "add_mask_row_loop": ("add_mask", {}),
    "fix_mask_bound": ("fix_mask_bound", {}),
    "segment_bound": ("fix_mask_bound", {}),
    "other_identity": ("other_identity", {}),
    "mask_padded_lanes": ("mask_padded_lanes", {}),
    "k_tail_mask": ("k_tail_mask", {"atol": 0.5}),  # fp32 matmul at x100, as in eval/cases
    "grid_cdiv": ("grid_cdiv", {}),
    "subtract_rowmax_logsoftmax": ("subtract_rowmax", {}),
    "subtract_rowmax_softmax2d": ("subtract_rowmax", {}),
    "mean_over_n": ("mean_over_n", {}),
    "variance_biased": ("variance_biased", {}),
    "eps_inside_sqrt": ("eps_inside_sqrt", {}),
    "add_mask_2d": ("add_mask", {}),
    "widen_accumulator": ("widen_accumulator", {}),
    "output_dtype": ("output_dtype", {}),
    "advance_pointers_matmul": ("advance_pointers", {"atol": 0.5}),
    "advance_pointers_row_loop": ("advance_pointers", {}),
    "grid_stride_loop": ("advance_pointers", {}),
    "swap_strides": ("swap_strides", {}),
    "contiguous_inputs": ("contiguous_inputs", {}),
    "atomic_accumulate": ("atomic_accumulate", {}),
    "scan_inclusive": ("scan_inclusive", {}),
    "scan_carry": ("scan_inclusive", {}),
    "scan_block_order": ("scan_inclusive", {}),
    "scan_combine_carry": ("scan_inclusive", {}),
    "activation_erf": ("activation_constant", {}),
    "activation_leaky": ("activation_constant", {}),
    "stable_activation": ("stable_activation", {}),
    "swap_program_id_axis": ("swap_program_id_axis", {}),
    "block_covers_row": ("block_covers_row", {}),
    "drop_early_return": ("drop_early_return", {}),
    "activation_silu": ("activation_constant", {}),
    "store_offsets": ("store_offsets", {}),
    "swap_reduction_axis": ("swap_reduction_axis", {}),
    "broadcast_axis": ("broadcast_axis", {}),
    "gelu_variant": ("gelu_variant", {}),
    # weight [N, K] read as [K, N]: the launch's strides swapped by the mask's bound (two kernels)
    "swap_strides_weight": ("swap_strides", {"atol": 0.5}),
    "swap_strides_weight_proj": ("swap_strides", {"atol": 0.5}),
    # a tl.dot operand loaded [N, K] without its transpose (two kernels)
    "dot_operand_transpose": ("dot_operand_transpose", {"atol": 0.5}),
    "dot_operand_transpose_scores": ("dot_operand_transpose", {"atol": 0.5}),
    # a flat mask compared against a stride (1): the element count passed in (direct and dispatched launch)
    "mask_bound_numel": ("mask_bound_numel", {}),
    "mask_bound_numel_dispatch": ("mask_bound_numel", {}),
    # an elementwise function taken on the host and again in the kernel (function and method forms)
    "drop_repeated_transform": ("drop_repeated_transform", {}),
    "drop_repeated_transform_method": ("drop_repeated_transform", {}),
}


def evaluate_src(reference: str, candidate: str, fail_fast: bool = False, **tol):
    """The project's full-coverage evaluation of one candidate on the CPU interpreter."""
    from debugger.case import case_from_sources
    from debugger.evaluate import evaluate
    return evaluate(case_from_sources(reference, candidate, **tol), device="cpu", fail_fast=fail_fast)


def check(reference: str, candidates: dict[str, str], **opts) -> dict[str, dict]:
    """The standalone checker (tests/data/recipes/_check.py): kept for the 2**31-element case, whose
    input the evaluation's clones and poisoned copies would make several GiB."""
    spec = {"reference": reference, "candidates": candidates, "seeds": [0, 1],
            "atol": 1e-4, "rtol": 1e-4, **opts}
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, str(CHECK), "-"], input=json.dumps(spec), text=True,
                          capture_output=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", sorted(CASES))
def test_recipe_repairs_case(case):
    """The buggy candidate fails the evaluation; one of the recipe's patches passes all its checks
    (seeds, x100 and x0.01 inputs, negated inputs, non-contiguous and transposed layouts, re-drawn
    parameters)."""
    recipe_id, tol = CASES[case]
    folder = DATA / case
    ref = (folder / "reference.py").read_text()
    cand = (folder / "candidate.py").read_text()
    patches = get(recipe_id).propose(cand)
    assert patches, f"{recipe_id} proposed nothing for {case}"
    for p in patches:
        assert isinstance(p, Patch) and p.recipe == recipe_id and parses(p.new_src) and p.sites
    buggy = evaluate_src(ref, cand, fail_fast=True, **tol)
    assert buggy.status != "pass", f"{case}: the buggy candidate already passes"
    reports = []
    for p in patches:
        report = evaluate_src(ref, p.new_src, **tol)
        if report.status == "pass":
            return
        reports.append(f"{p.description}: {report.status}: {report.message}")
    pytest.fail(f"{case}: no patch passes:\n" + "\n".join(reports))


# Recipes whose move is a choice between two honest semantics (the reference decides) or a
# harmless hardening: they may propose on correct code. Every other recipe must stay silent there.
SPECULATIVE = {"variance_biased", "scan_inclusive", "int64_offsets", "contiguous_inputs", "gelu_variant"}
CORRECT = sorted(p.name for p in (DATA / "correct").iterdir() if p.is_dir())
# fp32 matmul on x100 inputs: summation order alone moves near-zero outputs past atol=1e-4
CORRECT_TOL = {"matmul": {"atol": 0.5}}


@pytest.mark.parametrize("name", CORRECT)
def test_no_edits_on_honest_kernels(name):
    src = (DATA / "correct" / name / "candidate.py").read_text()
    noisy = {rid: [p.description for p in r.propose(src)] for rid, r in RECIPES.items()
             if rid not in SPECULATIVE}
    assert not {rid: d for rid, d in noisy.items() if d}


def test_honest_kernels_are_correct():
    """The negative examples really are correct (else the test above proves nothing)."""
    for name in CORRECT:
        folder = DATA / "correct" / name
        report = evaluate_src((folder / "reference.py").read_text(), (folder / "candidate.py").read_text(),
                              **CORRECT_TOL.get(name, {}))
        assert report.status == "pass", (name, report.message)


BROKEN = '''
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs
    tl.store(x_ptr + offs, x * 2)
'''


@pytest.mark.parametrize("recipe_id", sorted(RECIPES))
def test_unparseable_source_yields_nothing(recipe_id):
    assert get(recipe_id).propose(BROKEN) == []
    assert get(recipe_id).propose("") == []


@pytest.mark.parametrize("recipe_id", sorted(RECIPES))
def test_recipe_metadata(recipe_id):
    from debugger.symptoms import ALL
    import tomllib
    classes = tomllib.loads((Path(__file__).parents[1] / "debugger" / "bug_classes.toml").read_text())
    r = get(recipe_id)
    assert r.id == recipe_id and r.description
    assert r.bug_classes and set(r.bug_classes) <= set(classes)
    assert set(r.symptoms) <= set(ALL), set(r.symptoms) - set(ALL)


def test_required_recipe_ids_present():
    required = {"add_mask", "fix_mask_bound", "other_identity", "grid_cdiv", "widen_accumulator",
                "subtract_rowmax", "advance_pointers", "swap_strides", "contiguous_inputs",
                "atomic_accumulate", "int64_offsets", "mean_over_n", "variance_biased", "eps_inside_sqrt",
                "k_tail_mask", "swap_program_id_axis", "scan_inclusive", "block_covers_row",
                "output_dtype", "activation_constant"}
    assert required <= set(RECIPES)
    # int64_offsets needs a 2**31-element tensor (a slow test of its own); dot_ieee_precision changes
    # nothing on the interpreter (tf32 exists only on a GPU): tested statically in tests/test_real_faults.py
    # contiguous_view proposes only with the run's error as its hint (tests/test_real_faults.py)
    # the languages' recipes (CUDA's: tests/test_cuda_recipes.py) register when debugger.lang loads
    from debugger import lang

    assert {r for case in CASES.values() for r in [case[0]]} | {"int64_offsets", "dot_ieee_precision",
                                                                 "contiguous_view"} | GPU_ONLY \
        | {r.id for r in lang.recipes()} >= set(RECIPES)


# what only a GPU shows (its patch changes nothing on the interpreter): tests/test_gpu_experiments.py
GPU_ONLY = {"int64_offset_terms", "atomic_rmw", "two_launch_carry"}


def test_registry_lookups():
    assert get("add_mask") is RECIPES["add_mask"]
    with pytest.raises(KeyError, match="known"):
        get("no_such_recipe")
    assert [r.id for r in recipes.for_bug_class("k_loop_tail")] == ["k_tail_mask"]
    assert "grid_cdiv" in [r.id for r in recipes.for_symptoms(["floor_div_grid"])]
    src = (DATA / "grid_cdiv" / "candidate.py").read_text()
    all_patches = recipes.propose_all(src)
    assert any(p.recipe == "grid_cdiv" for p in all_patches)
    only = recipes.propose_all(src, bug_classes=["grid_undercount"])
    assert only and {p.recipe for p in only} <= {"grid_cdiv", "swap_program_id_axis"}


def test_patches_touch_only_the_candidate_and_stay_parseable():
    """Every patch of every recipe on every case parses, differs, names real lines, and keeps the
    file a KernelBench candidate (ModelNew still defined)."""
    for case in CASES:
        src = (DATA / case / "candidate.py").read_text()
        n_lines = src.count("\n") + 1
        for p in recipes.propose_all(src):
            assert p.new_src != src and parses(p.new_src)
            assert "class ModelNew" in p.new_src
            assert p.sites and all(1 <= l <= n_lines for l in p.sites), (p.recipe, p.sites)


def test_hints_reorder_but_do_not_filter():
    src = (DATA / "add_mask_elementwise" / "candidate.py").read_text()
    plain = get("add_mask").propose(src)
    hinted = get("add_mask").propose(src, {"kernel": "axpy_kernel", "line": 14})
    assert {p.new_src for p in plain} == {p.new_src for p in hinted}
    singles = [p for p in hinted if len(p.sites) == 1]
    assert singles[0].sites == [14]


@pytest.mark.slow
def test_int64_offsets_on_a_tensor_past_2_31_elements():
    """The last row of a 2**31-byte tensor starts past the int32 range: int32 offsets wrap."""
    folder = DATA / "int64_offsets"
    cand = (folder / "candidate.py").read_text()
    patches = get("int64_offsets").propose(cand)
    assert patches
    res = check((folder / "reference.py").read_text(), {"buggy": cand, "fixed": patches[0].new_src},
                seeds=[0], clone=False, atol=1e-3, rtol=1e-5)
    assert not res["buggy"]["pass"] and res["fixed"]["pass"], res


def test_diagnosis_unlocks_speculative_alternatives():
    """Without evidence in the source a recipe holds back its guesses; the diagnosis naming its bug
    class (hints or propose_all's bug_classes) lets them through, evidence-backed ones first."""
    src = (DATA / "correct" / "matmul" / "candidate.py").read_text()
    assert get("swap_strides").propose(src) == []
    forced = get("swap_strides").propose(src, {"bug_class": "stride_layout"})
    assert forced and all(parses(p.new_src) for p in forced)
    assert {p.recipe for p in recipes.propose_all(src, bug_classes=["stride_layout"])} >= {"swap_strides"}


def test_segment_bound_moves_the_segment_start_across_the_comparison():
    # `start + offs_j < num_indices` becomes `offs_j < end - start` (the hand fix's form and its PTX),
    # not `start + offs_j < end`.
    src = (REPO / "eval/cases/mask_missing__embedding_bag_sum__c/candidate.py").read_text()
    patches = [p for p in get("fix_mask_bound").propose(src) if "segment" in p.description]
    assert patches
    new = patches[0].new_src
    assert "j_mask = offs_j < end - start" in new
    assert new.replace("j_mask = offs_j < end - start", "j_mask = start + offs_j < num_indices") == src
