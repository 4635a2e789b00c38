"""cuda_transposed_conv_weight: a gather-form transposed convolution read with PyTorch's conventions.

Facts `cuda_transposed_taps_flipped` and `cuda_transposed_weight_out_major` (transposed.py). The fixes:
- taps: `K - 1 - k` in the weight index becomes `k` (the input position already subtracts `k`), and
  `2 * pad` in the input position becomes `pad`;
- layout: an out-channel-major index (`oc * C_in * K + ic * K`) becomes ConvTranspose's (in, out /
  groups, k...): `ic * C_out * K + oc * K`, with groups `ic * (C_out / groups) * K + (oc % (C_out /
  groups)) * K`.
Whether the layout must change depends on the tensor the kernel is handed, which the source does not
say: a weight declared (out, in, k...) with in != out takes the reference's values transposed (the
parameter correspondence), so its out-major index is right there. The recipe proposes the taps alone,
then taps and layout together (the layout alone when the taps are right), and the evaluation decides.
"""
from __future__ import annotations

from debugger.lang.cuda.recipes.base import CudaRecipe
from debugger.lang.cuda.transposed import transposed_gathers
from debugger.lang.cuda.unit import Unit


class CudaTransposedConvWeight(CudaRecipe):
    id = "cuda_transposed_conv_weight"
    bug_classes = ("operator_misread",)
    symptoms = ("cuda_transposed_taps_flipped", "cuda_transposed_weight_out_major", "all_wrong")
    description = ("CUDA: a gather-form transposed convolution with unflipped taps, single padding and "
                   "ConvTranspose's (in, out / groups, k...) weight layout")

    def unit_fixes(self, unit: Unit, hints):
        for fn in unit.kernels:
            for g in transposed_gathers(fn):
                taps = g.tap_edits
                what = []
                if g.flips:
                    what.append("taps unflipped (" + ", ".join(t for *_, t in g.flips) + ")")
                if g.doubled:
                    what.append("padding added once")
                if taps:
                    yield taps, f"{fn.name}: " + ", ".join(what)
                if g.swap:
                    oc, ic = g.channels
                    yield taps + list(g.swap), (f"{fn.name}: " + ", ".join(
                        what + [f"weight read as (in, out / groups, k...): {ic} major, {oc} within"]))
