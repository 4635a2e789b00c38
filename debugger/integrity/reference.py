"""What the reference Model computes, as far as the static rules need to know it.

The compute rule asks which op families make up the reference's forward and which of them is its
main (heaviest) computation; the precision rule asks whether the task is already in half precision;
the mutation rule asks whether the reference itself works in place.
"""
from __future__ import annotations

from dataclasses import dataclass

from debugger.integrity import ops
from debugger.integrity.compute import compute_sites
from debugger.integrity.syntax import SourceModule, text, walk
from debugger.integrity.values import Kind, ValueKinds

LOW_PRECISION_DTYPES = {"float16", "half", "bfloat16", "float8_e4m3fn", "float8_e5m2"}


@dataclass(frozen=True)
class ReferenceProfile:
    """The reference's op families, its main ones, and its precision and mutation facts."""

    families: frozenset[str] = frozenset()
    main: frozenset[str] = frozenset()
    low_precision: bool = False
    mutates_inputs: bool = False
    class_names: frozenset[str] = frozenset({"Model"})

    @property
    def main_weight(self) -> float | None:
        """The weight of the main computation (3 matmul/conv ... 0.5 arithmetic); None when unknown."""
        return max((ops.FAMILY_WEIGHT[f] for f in self.main), default=None)


def profile_reference(reference_src: str) -> ReferenceProfile:
    """Read the reference source; an unreadable reference gives an empty profile."""
    module = SourceModule(reference_src)
    entry = module.entry("Model")
    low_precision = _mentions_low_precision(module)
    classes = frozenset(module.classes) | {"Model"}
    if entry is None:
        return ReferenceProfile(low_precision=low_precision, class_names=classes)
    functions = module.reachable(entry)
    kinds = ValueKinds(module, functions, entry)
    families = {site.family for site in compute_sites(module, functions, kinds)}
    computing = {f for f in families if ops.FAMILY_WEIGHT[f] > 0} or families
    top = max((ops.FAMILY_WEIGHT[f] for f in computing), default=0)
    main = frozenset(f for f in computing if ops.FAMILY_WEIGHT[f] == top)
    mutates = any(
        node.type == "call" and node.child_by_field_name("function").type == "attribute"
        and text(node.child_by_field_name("function").child_by_field_name("attribute")).endswith("_")
        and kinds.kind(node.child_by_field_name("function").child_by_field_name("object"), fn) == Kind.INPUT
        for fn in functions for node in walk(fn.body)
    ) or "inplace=True" in reference_src.replace(" ", "")
    return ReferenceProfile(frozenset(families), main, low_precision, mutates, classes)


def _mentions_low_precision(module: SourceModule) -> bool:
    for node in walk(module.root):
        if node.type == "attribute":
            name = text(node.child_by_field_name("attribute"))
            if name in LOW_PRECISION_DTYPES and (module.resolve(node) or "").startswith("torch."):
                return True
            if name in ("half", "bfloat16") and node.parent is not None and node.parent.type == "call":
                return True
    return False
