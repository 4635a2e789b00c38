"""Find the places where Python code computes with PyTorch (not allocates, views, casts or launches).

A `ComputeSite` is one such place: a torch/F/aten call, a tensor compute method (`.sum()`), an nn
layer called as a function (`self.conv(x)`), the `@` operator, or arithmetic on a tensor. Each
carries the op's family (see ops.py) and the `Kind` of what it is applied to (see values.py).
Both the candidate's forward path and the reference's Model.forward are read with this.
"""
from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from debugger.integrity import ops
from debugger.integrity.syntax import Function, SourceModule, call_args, strip_parens, text, walk
from debugger.integrity.values import Kind, ValueKinds

_ARITH_OPERATORS = {"+", "-", "*", "/", "//", "%", "**"}


@dataclass(frozen=True)
class ComputeSite:
    """One PyTorch computation in Python code."""

    node: Node
    op: str
    family: str
    operand: Kind
    function: Function

    @property
    def line(self) -> int:
        """Where it is."""
        return self.node.start_point[0] + 1


def compute_sites(module: SourceModule, functions: list[Function], kinds: ValueKinds) -> list[ComputeSite]:
    """Every PyTorch computation in the bodies of `functions`, in source order."""
    sites = []
    for fn in functions:
        for node in walk(fn.body):
            site = _site(module, fn, kinds, node)
            if site is not None:
                sites.append(site)
    return sites


def _site(module: SourceModule, fn: Function, kinds: ValueKinds, node: Node) -> ComputeSite | None:
    if node.type == "call":
        return _call_site(module, fn, kinds, node)
    if node.type in ("binary_operator", "augmented_assignment"):
        operator = text(node.child_by_field_name("operator")).rstrip("=") or "="
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        operand = max(kinds.kind(left, fn), kinds.kind(right, fn))
        if operator == "@":
            return ComputeSite(node, "@", "matmul", operand, fn)
        if operator in _ARITH_OPERATORS and operand.is_tensor:
            return ComputeSite(node, operator, "arith", operand, fn)
    return None


def _call_site(module: SourceModule, fn: Function, kinds: ValueKinds, node: Node) -> ComputeSite | None:
    callee = strip_parens(node.child_by_field_name("function"))
    positional, _ = call_args(node)
    operand = max((kinds.kind(a, fn) for a in positional), default=Kind.OTHER)
    qualified = module.resolve(callee)
    if qualified is not None:
        family = ops.torch_function_family(qualified)
        return ComputeSite(node, qualified, family, operand, fn) if family else None
    layer = _layer_family(module, fn, callee)
    if layer is not None:
        return ComputeSite(node, f"{text(callee)}(...)", layer, operand, fn)
    if callee.type != "attribute":
        return None
    receiver = callee.child_by_field_name("object")
    method = text(callee.child_by_field_name("attribute"))
    if text(receiver) in ("self", "cls") or module.resolve(receiver) is not None:
        return None
    receiver_kind = kinds.kind(receiver, fn)
    family = ops.method_family(method)
    if family is None and method in ops.CONTAINER_METHODS and receiver_kind.is_tensor:
        family = ops.OP_FAMILY.get(method)
    if family is None or receiver_kind == Kind.META:
        return None
    operand = max(operand, receiver_kind)
    if family == "arith" and not operand.is_tensor:
        return None
    return ComputeSite(node, f".{method}()", family, operand, fn)


def _layer_family(module: SourceModule, fn: Function, callee: Node) -> str | None:
    """The family of an nn layer called as a function: self.conv(x), self.layers[i](x), nn.ReLU()(x)."""
    if callee.type == "call":
        made = module.resolve(callee.child_by_field_name("function")) or ""
        return ops.nn_layer_family(made.split(".")[-1]) if made.startswith("torch.nn.") else None
    if callee.type == "subscript":
        callee = strip_parens(callee.child_by_field_name("value"))
    if callee.type == "attribute" and text(callee.child_by_field_name("attribute")) == "forward":
        callee = callee.child_by_field_name("object")
    if callee.type != "attribute" or text(callee.child_by_field_name("object")) != "self" or fn.cls is None:
        return None
    rhs = module.self_attributes.get((fn.cls, text(callee.child_by_field_name("attribute"))))
    return layer_family_of(module, rhs) if rhs is not None else None


def layer_family_of(module: SourceModule, expr: Node) -> str | None:
    """The heaviest compute family among the torch.nn layers an expression constructs."""
    best = None
    for node in walk(expr):
        if node.type != "call":
            continue
        made = module.resolve(node.child_by_field_name("function")) or ""
        if made.startswith("torch.nn.") and made.count(".") == 2:
            family = ops.nn_layer_family(made.split(".")[-1])
            if family and (best is None or ops.FAMILY_WEIGHT[family] > ops.FAMILY_WEIGHT[best]):
                best = family
    return best
