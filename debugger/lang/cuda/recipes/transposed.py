"""cuda_transposed_conv_weight: a gather-form transposed convolution read with PyTorch's conventions.

Facts `cuda_transposed_taps_flipped` and `cuda_transposed_weight_out_major` (transposed.py). The fixes:
- taps: `K - 1 - k` in the weight index becomes `k` (the input position already subtracts `k`), and
  `2 * pad` in the input position becomes `pad`;
- layout: an out-channel-major index (`oc * C_in * K + ic * K`) becomes ConvTranspose's (in, out /
  groups, k...): `ic * C_out * K + oc * K`, with groups `ic * (C_out / groups) * K + (oc % (C_out /
  groups)) * K`. Where ModelNew declares the weight itself in a convolution's shape
  (`torch.randn(out_channels, in_channels // groups, k...)`), the declaration becomes (in_channels,
  out_channels // groups, k...) with it, and host code that reads the output-channel count from the
  weight's dim 0 reads dim 1 (times the groups): the tensor's shape then says its layout, and the reference's
  values map onto it as they are at every size (a (out, in, k...) tensor takes them transposed where
  in != out and as they are where in == out, which no single kernel layout reads right).
Whether the layout must change at all depends on the tensor the kernel is handed, which the source does
not say: a weight declared (out, in, k...) with in != out takes the reference's values transposed, so its
out-major index is right there. The recipe proposes the taps alone, then taps and layout (with the
declaration first, where there is one), and the evaluation decides.
"""
from __future__ import annotations

import re

from debugger.lang.cuda.recipes.base import CudaRecipe
from debugger.lang.cuda.transposed import IN_COUNT, OUT_COUNT, host_out_count_edits, transposed_gathers
from debugger.lang.cuda.unit import Unit
from debugger.recipes.syntax import Source
from debugger.source.edits import Edit
from debugger.source.tree import call_args, text, unparen, walk

TENSOR_MAKERS = re.compile(r"^torch\.(?:randn|rand|empty|zeros|ones|Tensor|FloatTensor)$")


def _count(node, pattern: re.Pattern) -> bool:
    return node.type in ("identifier", "attribute") and bool(pattern.match(text(node).split(".")[-1]))


def declaration_swaps(s: Source) -> list[Edit]:
    """Edits that declare a convolution-shaped weight, `torch.randn(C_out, C_in [// groups], k...)`, in
    ConvTranspose's (C_in, C_out [// groups], k...) instead; [] unless exactly one such call exists."""
    found = []
    for call in walk(s.root):
        if call.type != "call" or not TENSOR_MAKERS.match(text(call.child_by_field_name("function"))):
            continue
        pos, _ = call_args(call)
        if len(pos) < 3:
            continue
        first, second = unparen(pos[0]), unparen(pos[1])
        if not _count(first, OUT_COUNT):
            continue
        if _count(second, IN_COUNT):
            found.append([Edit.replace(first, text(second)), Edit.replace(second, text(first))])
        elif second.type == "binary_operator" and text(second.child_by_field_name("operator")) in ("//", "/") \
                and _count(unparen(second.child_by_field_name("left")), IN_COUNT):
            groups = text(second.child_by_field_name("right"))
            op = text(second.child_by_field_name("operator"))
            found.append([Edit.replace(first, text(unparen(second.child_by_field_name("left")))),
                          Edit.replace(second, f"{text(first)} {op} {groups}")])
    return found[0] if len(found) == 1 else []


class CudaTransposedConvWeight(CudaRecipe):
    id = "cuda_transposed_conv_weight"
    bug_classes = ("operator_misread",)
    symptoms = ("cuda_transposed_taps_flipped", "cuda_transposed_weight_out_major", "all_wrong")
    description = ("CUDA: a gather-form transposed convolution with unflipped taps, single padding and "
                   "ConvTranspose's (in, out / groups, k...) weight layout")

    def fixes(self, s: Source, unit: Unit, hints: dict):
        declared = declaration_swaps(s)
        for fn in unit.kernels:
            for g in transposed_gathers(fn):
                what = []
                if g.flips:
                    what.append("taps unflipped (" + ", ".join(t for *_, t in g.flips) + ")")
                if g.doubled:
                    what.append("padding added once")
                if g.tap_edits:
                    yield g.tap_edits, [], f"{fn.name}: " + ", ".join(what)
                if g.swap:
                    oc, ic = g.channels
                    layout = what + [f"weight read as (in, out / groups, k...): {ic} major, {oc} within"]
                    if declared:  # the host's output-channel count then comes from the weight's dim 1
                        yield (g.tap_edits + list(g.swap) + host_out_count_edits(unit), declared,
                               f"{fn.name}: " + ", ".join(layout + ["the weight declared in that shape"]))
                    yield g.tap_edits + list(g.swap), [], f"{fn.name}: " + ", ".join(layout)
