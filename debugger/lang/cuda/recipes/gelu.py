"""cuda_exact_gelu: GELU by its tanh approximation where the reference's GELU is exact.

The fact is `cuda_tanh_gelu` (formulas.py). The fix replaces the tanh call of the approximation with
`erff(x * 0.70710678f)` (x the approximation's own input): `0.5 * x * (1 + tanh(...))` around it becomes
exact GELU, and a local that only fed the tanh is left for the compiler to drop. Whether the reference
wants exact GELU is not in the candidate: the recipe proposes when asked for activation_formula (a
diagnosis, a hint) or by the repair graph's `harden` step, and the evaluation decides.
"""
from __future__ import annotations

from debugger.lang.cuda.formulas import tanh_gelus
from debugger.lang.cuda.recipes.base import CudaRecipe
from debugger.lang.cuda.unit import Unit
from debugger.source.tree import text


class CudaExactGelu(CudaRecipe):
    id = "cuda_exact_gelu"
    bug_classes = ("activation_formula",)
    symptoms = ("cuda_tanh_gelu", "precision_noise", "fails_large_magnitude")
    description = "CUDA: exact GELU, 0.5 * x * (1 + erf(x / sqrt(2))), instead of its tanh approximation"

    def unit_fixes(self, unit: Unit, hints):
        edits, where = [], []
        for fn in unit.functions:
            if fn.kind == "host":
                continue
            for g in tanh_gelus(fn):
                edits.append((g.call.start_byte, g.call.end_byte, g.replacement))
                where.append(f"{fn.name}: {text(g.call)[:60]} -> {g.replacement}")
        if edits:
            yield edits, "exact GELU (erf) for the tanh approximation in " + "; ".join(where)
