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
from debugger.integrity.values import Kind, ValueKinds
from debugger.source.host import RESHAPE_METHODS, Function, SourceModule
from debugger.source.tree import call_arg, call_args, text, unparen, walk

_ARITH_OPERATORS = {"+", "-", "*", "/", "//", "%", "**"}


@dataclass(frozen=True)
class ComputeSite:
    """One PyTorch computation in Python code."""

    node: Node
    op: str
    family: str
    operand: Kind
    function: Function
    name: str = ""  # the op's own name (relu, add, conv2d), for matching candidate ops with reference ops
    layers: tuple[str, ...] = ()  # for a layer call: every torch.nn layer class the called expression builds
    mixed: bool = False  # the called container also holds in-file modules (the candidate's own layers)

    @property
    def line(self) -> int:
        """Where it is."""
        return self.node.start_point[0] + 1

    @property
    def key(self) -> str:
        """What the op computes, as one reference sub-operation: its family for the substantial families
        (any conv is a conv), its own name for elementwise work (`*` and torch.mul are one op)."""
        if ops.FAMILY_WEIGHT[self.family] >= 2:
            return self.family
        return ops.canonical_op(self.name or self.op)

    @property
    def all_keys(self) -> list[str]:
        """The sub-operations this site computes: one per layer of a called nn.Sequential."""
        if not self.layers:
            return [self.key]
        families = [(ops.nn_layer_family(c), c) for c in self.layers]
        return [f if ops.FAMILY_WEIGHT[f] >= 2 else ops.canonical_op(c) for f, c in families
                if f and ops.FAMILY_WEIGHT[f] > 0]


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
        if operator in _ARITH_OPERATORS and _module_tensor(left) and _module_tensor(right):
            return None  # `self.bias + self.add_value.reshape(...)`: prepares parameters, computes nothing of the input
        if operator == "@":
            return ComputeSite(node, "@", "matmul", operand, fn)
        if operator in _ARITH_OPERATORS and operand.is_tensor:
            return ComputeSite(node, operator, "arith", operand, fn, ops.canonical_op(operator))
    return None


def _module_tensor(node: Node | None) -> bool:
    """`self.a.b`, or a view of it (`self.bias.reshape(-1)`): a tensor the module holds, not a value of forward."""
    node = unparen(node) if node is not None else None
    while node is not None and node.type == "call":
        callee = unparen(node.child_by_field_name("function"))
        if callee.type != "attribute" or text(callee.child_by_field_name("attribute")) not in RESHAPE_METHODS:
            return False
        node = unparen(callee.child_by_field_name("object"))
    if node is None or node.type != "attribute":
        return False
    while node.type == "attribute":
        node = unparen(node.child_by_field_name("object"))
    return node.type == "identifier" and text(node) == "self"


def _call_site(module: SourceModule, fn: Function, kinds: ValueKinds, node: Node) -> ComputeSite | None:
    callee = unparen(node.child_by_field_name("function"))
    positional, _ = call_args(node)
    operand = max((kinds.kind(a, fn) for a in positional), default=Kind.OTHER)
    qualified = module.resolve(callee)
    if qualified is not None:
        family = ops.torch_function_family(qualified)
        return ComputeSite(node, qualified, family, operand, fn) if family else None
    layer = _layer(module, fn, callee)
    if layer is not None:
        built = _built_layers(module, fn, callee)
        return ComputeSite(node, f"{text(callee)}(...)", layer[0], operand, fn, layer[1],
                           tuple(built[0]), built[1])
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


def _layer(module: SourceModule, fn: Function, callee: Node) -> tuple[str, str] | None:
    """(family, layer class) of an nn layer called as a function: self.conv(x), self.layers[i](x), nn.ReLU()(x)."""
    if callee.type == "call":
        made = module.resolve(callee.child_by_field_name("function")) or ""
        family = ops.nn_layer_family(made.split(".")[-1]) if made.startswith("torch.nn.") else None
        return (family, made.split(".")[-1]) if family else None
    if callee.type == "subscript":
        callee = unparen(callee.child_by_field_name("value"))
    if callee.type == "attribute" and text(callee.child_by_field_name("attribute")) == "forward":
        callee = callee.child_by_field_name("object")
    if callee.type != "attribute" or text(callee.child_by_field_name("object")) != "self" or fn.cls is None:
        return None
    rhs = module.self_attributes.get((fn.cls, text(callee.child_by_field_name("attribute"))))
    return layer_of(module, rhs, fn.cls) if rhs is not None else None


def _built_layers(module: SourceModule, fn: Function, callee: Node) -> tuple[list[str], bool]:
    """(torch.nn layer classes, whether in-file modules are built too) of the expression a layer call calls."""
    if callee.type == "subscript":
        callee = unparen(callee.child_by_field_name("value"))
    if callee.type != "attribute" or text(callee.child_by_field_name("object")) != "self" or fn.cls is None:
        return [], False
    rhs = module.self_attributes.get((fn.cls, text(callee.child_by_field_name("attribute"))))
    if rhs is None:
        return [], False
    classes, mixed = [], False
    for node in (n for expr, owner in handed_in(module, rhs, fn.cls) for n in _with_local_lists(module, owner, expr)):
        if node.type == "call":
            made = module.resolve(node.child_by_field_name("function")) or ""
            if made.startswith("torch.nn.") and made.count(".") == 2:
                classes.append(made.split(".")[-1])
            elif text(node.child_by_field_name("function")) in module.classes:
                mixed = True
    return classes, mixed


def _with_local_lists(module: SourceModule, cls: str | None, rhs: Node) -> list[Node]:
    """The nodes of `rhs` and, for `nn.Sequential(*layers)`, of what the same method put in `layers`."""
    nodes = list(walk(rhs))
    names = {text(n) for n in nodes if n.type == "identifier"}
    method = next((f for f in module.functions.values() if f.cls == cls and f.node.start_byte <= rhs.start_byte
                   < f.node.end_byte), None)
    if method is None or not names:
        return nodes
    for node in walk(method.body):
        if node.type == "call":
            callee = node.child_by_field_name("function")
            if callee.type == "attribute" and text(callee.child_by_field_name("object")) in names \
                    and text(callee.child_by_field_name("attribute")) in ("append", "extend", "insert"):
                nodes += list(walk(node.child_by_field_name("arguments")))
        elif node.type == "assignment" and text(node.child_by_field_name("left")) in names \
                and node.child_by_field_name("right") is not None and node.child_by_field_name("right") != rhs:
            nodes += list(walk(node.child_by_field_name("right")))
    return nodes


def layer_of(module: SourceModule, expr: Node, cls: str | None = None) -> tuple[str, str] | None:
    """(family, class) of the heaviest torch.nn layer an expression constructs."""
    best = None
    for node in (n for e, owner in handed_in(module, expr, cls) for n in _with_local_lists(module, owner, e)):
        if node.type != "call":
            continue
        made = module.resolve(node.child_by_field_name("function")) or ""
        if made.startswith("torch.nn.") and made.count(".") == 2:
            family = ops.nn_layer_family(made.split(".")[-1])
            if family and (best is None or ops.FAMILY_WEIGHT[family] > ops.FAMILY_WEIGHT[best[0]]):
                best = (family, made.split(".")[-1])
    return best


def handed_in(module: SourceModule, expr: Node, cls: str | None, depth: int = 0) -> list[tuple[Node, str | None]]:
    """`expr` (in a method of `cls`) and, where it names a parameter of cls's __init__ (`self.bn = bn`), the
    arguments every construction of cls in the file hands it (`Fused(self.conv, self.bn)`, a local `bn =
    nn.BatchNorm2d(c)`), followed through the constructing class's own attributes: each with the class whose
    method it is in. A layer built in one module and handed to another's constructor is still that layer."""
    found = [(expr, cls)]
    expr = unparen(expr)
    init = module.method(cls, "__init__") if cls else None
    if depth > 2 or init is None or expr.type != "identifier" or text(expr) not in init.params:
        return found
    index, name = init.params.index(text(expr)), text(expr)
    for fn in module.functions.values():
        for call in walk(fn.body):
            if call.type != "call" or text(call.child_by_field_name("function")) != cls:
                continue
            arg = call_arg(call, index, name)
            if arg is None:
                continue
            arg = unparen(arg)
            if arg.type == "attribute" and text(arg.child_by_field_name("object")) == "self" and fn.cls is not None:
                rhs = module.self_attributes.get((fn.cls, text(arg.child_by_field_name("attribute"))))
                if rhs is not None:
                    found += handed_in(module, rhs, fn.cls, depth + 1)
            else:
                found += handed_in(module, arg, fn.cls, depth + 1)
    return found
