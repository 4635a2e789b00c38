"""cuda_avg_pool_window: an average pool that divides by its valid taps divides by the whole window.

Fact `cuda_avgpool_counts_valid` (pooling.py): `sum / count` with `count` the taps inside the input
becomes `sum / (float)(window)`, the window the product of the tap loops' bounds, as PyTorch's AvgPool
does by default (count_include_pad=True). The count itself is left for the compiler to drop.
"""
from __future__ import annotations

from debugger.lang.cuda.pooling import valid_count_averages
from debugger.lang.cuda.recipes.base import CudaRecipe
from debugger.lang.cuda.unit import Unit
from debugger.source.tree import text


class CudaAvgPoolWindow(CudaRecipe):
    id = "cuda_avg_pool_window"
    bug_classes = ("operator_misread",)
    symptoms = ("cuda_avgpool_counts_valid", "sparse_wrong")
    description = "CUDA: an average pool divides by the whole window (count_include_pad=True), not the valid taps"

    def unit_fixes(self, unit: Unit, hints):
        for fn in unit.kernels:
            for a in valid_count_averages(fn):
                yield ([(a.divisor.start_byte, a.divisor.end_byte, f"(float)({a.window})")],
                       f"{fn.name}: {text(a.division)} divides by the whole window, {a.window}")
