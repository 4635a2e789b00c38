"""What the reference Model computes, as far as the static rules need to know it.

The compute rule asks which op families make up the reference's forward and which of them is its
main (heaviest) computation; the precision rule asks whether the task is already in half precision;
the mutation rule asks whether the reference itself works in place.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from debugger.integrity import ops
from debugger.integrity.compute import ComputeSite, compute_sites
from debugger.integrity.values import Kind, ValueKinds
from debugger.source.host import Function, SourceModule
from debugger.source.tree import text, unparen, walk

LOW_PRECISION_DTYPES = {"float16", "half", "bfloat16", "float8_e4m3fn", "float8_e5m2"}


@dataclass(frozen=True)
class ReferenceProfile:
    """The reference's op families, its main ones, and its precision and mutation facts."""

    families: frozenset[str] = frozenset()
    main: frozenset[str] = frozenset()
    low_precision: bool = False
    mutates_inputs: bool = False
    class_names: frozenset[str] = frozenset({"Model"})
    final: frozenset[str] = frozenset()
    keys: frozenset[str] = frozenset()  # the reference's sub-operations (ComputeSite.key), data movement excluded
    key_counts: tuple[tuple[str, int], ...] = ()  # how often the source writes each of them
    returns_view: bool = False  # Model.forward returns its input or a view of it (broadcast_tensors, expand)

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
    functions = module.forward_path("Model")
    kinds = ValueKinds(module, functions, entry)
    sites = compute_sites(module, functions, kinds)
    families = {site.family for site in sites}
    final = frozenset(_final_families(entry, sites))
    computing = {f for f in families if ops.FAMILY_WEIGHT[f] > 0} or families
    top = max((ops.FAMILY_WEIGHT[f] for f in computing), default=0)
    main = frozenset(f for f in computing if ops.FAMILY_WEIGHT[f] == top)
    mutates = any(
        node.type == "call" and node.child_by_field_name("function").type == "attribute"
        and text(node.child_by_field_name("function").child_by_field_name("attribute")).endswith("_")
        and kinds.kind(node.child_by_field_name("function").child_by_field_name("object"), fn) == Kind.INPUT
        for fn in functions for node in walk(fn.body)
    ) or "inplace=True" in reference_src.replace(" ", "")
    counts = Counter(key for site in sites if ops.FAMILY_WEIGHT[site.family] > 0 for key in site.all_keys)
    returns_view = any(kinds.kind(unparen(node.named_children[0]), entry) == Kind.INPUT
                       for node in walk(entry.body) if node.type == "return_statement" and node.named_children)
    return ReferenceProfile(frozenset(families), main, low_precision, mutates, classes, final, frozenset(counts),
                            tuple(sorted(counts.items())), returns_view)


def _final_families(entry: Function, sites: list[ComputeSite]) -> set[str]:
    """Families of the last op the forward applies: the op in its return expression, through one name."""
    by_node = {(site.node.start_byte, site.node.end_byte): site.family for site in sites}
    finals = set()
    for node in walk(entry.body):
        if node.type != "return_statement" or not node.named_children:
            continue
        value = unparen(node.named_children[0])
        if value.type == "identifier":
            bound = [a.child_by_field_name("right") for a in walk(entry.body) if a.type == "assignment"
                     and text(a.child_by_field_name("left")) == text(value) and a.end_byte <= node.start_byte]
            value = unparen(bound[-1]) if bound else value
        while value.type == "subscript":  # torch.max(x, dim=1)[0]
            value = unparen(value.child_by_field_name("value"))
        if (value.start_byte, value.end_byte) in by_node:
            finals.add(by_node[(value.start_byte, value.end_byte)])
    return finals


def _mentions_low_precision(module: SourceModule) -> bool:
    for node in walk(module.root):
        if node.type == "attribute":
            name = text(node.child_by_field_name("attribute"))
            if name in LOW_PRECISION_DTYPES and (module.resolve(node) or "").startswith("torch."):
                return True
            if name in ("half", "bfloat16") and node.parent is not None and node.parent.type == "call":
                return True
    return False
