"""Fix recipes on real kernels: each buggy case under tests/data/recipes/ fails against its reference,
and one of the recipe's patches makes it pass on the Triton CPU interpreter (several seeds, x100
inputs and non-contiguous inputs where the bug is about them). Recipes leave honest kernels alone
where they do not apply, and propose nothing for source that does not parse.
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
from debugger.recipes.syntax import parses

DATA = Path(__file__).parent / "data" / "recipes"
CHECK = DATA / "_check.py"

# case folder -> (recipe id, options for the numerical check)
CASES = {
    "add_mask_elementwise": ("add_mask", {}),
    "add_mask_row_loop": ("add_mask", {}),
    "fix_mask_bound": ("fix_mask_bound", {}),
    "other_identity": ("other_identity", {"scale": True}),
    "mask_padded_lanes": ("mask_padded_lanes", {}),
    "k_tail_mask": ("k_tail_mask", {"atol": 1e-3, "rtol": 1e-3}),
    "grid_cdiv": ("grid_cdiv", {}),
    "subtract_rowmax_logsoftmax": ("subtract_rowmax", {"scale": True}),
    "subtract_rowmax_softmax2d": ("subtract_rowmax", {"scale": True}),
    "mean_over_n": ("mean_over_n", {}),
    "variance_biased": ("variance_biased", {}),
    "eps_inside_sqrt": ("eps_inside_sqrt", {}),
    "add_mask_2d": ("add_mask", {}),
    "widen_accumulator": ("widen_accumulator", {"atol": 1e-3, "rtol": 1e-4}),
    "output_dtype": ("output_dtype", {"atol": 1e-3, "rtol": 1e-3}),
    "advance_pointers_matmul": ("advance_pointers", {"atol": 1e-3, "rtol": 1e-3}),
    "advance_pointers_row_loop": ("advance_pointers", {}),
    "swap_strides": ("swap_strides", {"noncontig": True}),
    "contiguous_inputs": ("contiguous_inputs", {"noncontig": True}),
    "atomic_accumulate": ("atomic_accumulate", {"atol": 1e-4, "rtol": 1e-4}),
    "scan_inclusive": ("scan_inclusive", {"atol": 1e-4, "rtol": 1e-4}),
    "scan_carry": ("scan_inclusive", {"atol": 1e-4, "rtol": 1e-4}),
    "activation_erf": ("activation_constant", {}),
    "activation_leaky": ("activation_constant", {}),
    "stable_activation": ("stable_activation", {"scale": True}),
    "swap_program_id_axis": ("swap_program_id_axis", {}),
    "block_covers_row": ("block_covers_row", {}),
}


def _evaluator():
    """The lead's harness when it exists, else None (the local subprocess check is used)."""
    try:
        from debugger.case import case_from_sources
        from debugger.evaluate import evaluate
    except ImportError:
        return None
    return evaluate, case_from_sources


def check(reference: str, candidates: dict[str, str], **opts) -> dict[str, dict]:
    """Run each candidate against the reference in a subprocess on the CPU interpreter."""
    spec = {"reference": reference, "candidates": candidates, "seeds": [0, 1],
            "atol": 1e-4, "rtol": 1e-4, **opts}
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, str(CHECK), "-"], input=json.dumps(spec), text=True,
                          capture_output=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", sorted(CASES))
def test_recipe_repairs_case(case):
    recipe_id, opts = CASES[case]
    folder = DATA / case
    ref = (folder / "reference.py").read_text()
    cand = (folder / "candidate.py").read_text()
    patches = get(recipe_id).propose(cand)
    assert patches, f"{recipe_id} proposed nothing for {case}"
    for p in patches:
        assert isinstance(p, Patch) and p.recipe == recipe_id and parses(p.new_src) and p.sites
    candidates = {"buggy": cand, **{f"patch{i}": p.new_src for i, p in enumerate(patches)}}
    results = check(ref, candidates, **opts)
    assert not results["buggy"]["pass"], f"{case}: the buggy candidate already passes"
    passing = [name for name, r in results.items() if name != "buggy" and r["pass"]]
    assert passing, f"{case}: no patch passes: " + json.dumps(results, indent=1)[:3000]
