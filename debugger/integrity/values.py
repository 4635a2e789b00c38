"""A coarse guess of what each value in the forward path holds: the full input, a kernel's output, or less.

The compute rule judges a PyTorch op by what it is applied to. `Kind` orders the guesses:
INPUT (a forward argument, or a view of one) > FULL (a tensor as large as an input,
e.g. `torch.empty_like(x)` or an elementwise result over the input) > PART (a tensor of unknown or
smaller size: partial results, a matmul output buffer, the module's parameters) > OTHER (unknown, perhaps not a tensor) >
META (shapes, sizes, dtypes, numbers). Flow is by source position within a function, ignoring
control flow; arguments flow into in-file helpers through their call sites.
"""
from __future__ import annotations

import bisect
from enum import IntEnum

from tree_sitter import Node

from debugger.integrity import ops
from debugger.source.host import Function, SourceModule
from debugger.source.tree import call_args, text, unparen, walk


class Kind(IntEnum):
    """What a value holds, from least to most tensor data of the operator's inputs."""

    META = 0
    OTHER = 1
    PART = 2
    FULL = 3
    INPUT = 4

    @property
    def is_tensor(self) -> bool:
        """Known to be a tensor."""
        return self >= Kind.PART

    @property
    def is_full_size(self) -> bool:
        """As large as the operator's input."""
        return self >= Kind.FULL


_META_BUILTINS = {"len", "int", "float", "min", "max", "abs", "round", "range", "bool", "str", "tuple",
                  "list", "isinstance", "hasattr", "sum", "divmod", "pow", "enumerate", "zip", "sorted"}
_META_MODULES = ("math.", "triton.", "builtins.", "operator.index", "numbers.")
_LAYER_TENSORS = ("weight", "bias", "running_", "in_proj", "out_proj", "scale", "shift")
_NUMERIC_LITERALS = {"integer", "float", "true", "false", "none", "string", "concatenated_string"}
_PARAMETER_MAKERS = ("torch.nn.Parameter", "torch.randn", "torch.rand", "torch.empty", "torch.zeros",
                     "torch.ones", "torch.tensor", "torch.full")


class ValueKinds:
    """Kinds of names, per function on the forward path, with call-site flow into helpers."""

    def __init__(self, module: SourceModule, functions: list[Function], entry: Function | None):
        self.module = module
        self.functions = functions
        self._events: dict[str, tuple[list[int], list[tuple[str, Node, Node]]]] = {}
        self._params: dict[str, dict[str, Kind]] = {f.qualname: {} for f in functions}
        self._memo: dict[tuple[str, int, int, str], Kind] = {}
        if entry is not None:
            self._params[entry.qualname] = {p: Kind.INPUT for p in entry.params}
        for fn in functions:
            self._events[fn.qualname] = self._assignments(fn)
        self._flow_arguments(entry)

    # -- public --------------------------------------------------------------------------------
    def kind(self, node: Node | None, fn: Function | None) -> Kind:
        """The kind of an expression inside function `fn`."""
        return self._kind(node, fn, depth=0)

    def param_kind(self, fn: Function, name: str) -> Kind:
        """The kind of a parameter of `fn`, from its call sites."""
        return self._params.get(fn.qualname, {}).get(name, Kind.OTHER)

    def self_attribute_kind(self, fn: Function, attr: str) -> Kind:
        """Parameters, buffers and layers held by the module are tensors (PART); numbers are metadata."""
        rhs = self.module.self_attributes.get((fn.cls, attr)) if fn.cls else None
        if rhs is None:
            return Kind.OTHER
        rhs = unparen(rhs)
        if rhs.type in _NUMERIC_LITERALS or rhs.type in ("tuple", "list", "dictionary", "set"):
            return Kind.META if rhs.type in _NUMERIC_LITERALS else Kind.OTHER
        if rhs.type == "call":
            made = self.module.resolve(rhs.child_by_field_name("function")) or ""
            # Parameters count as PART: usually small next to the activations (a bias, a scale),
            # and a matmul or conv over a weight is judged heavy whatever its operand.
            if made.startswith(_PARAMETER_MAKERS) or made.startswith("torch.nn."):
                return Kind.PART
            if text(rhs.child_by_field_name("function")) in self.module.classes:
                return Kind.OTHER
        if rhs.type == "identifier":  # self.dim = dim: an __init__ argument, i.e. a number
            return Kind.META
        return Kind.OTHER

    # -- assignments ---------------------------------------------------------------------------
    def _assignments(self, fn: Function) -> tuple[list[int], list[tuple[str, Node, Node]]]:
        """(positions, [(name, value expression, whole target)]) sorted by position."""
        events: list[tuple[int, str, Node, Node]] = []
        for node in walk(fn.body):
            if node.type in ("assignment", "augmented_assignment"):
                left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
                if left is None or right is None:
                    continue
                if node.type == "augmented_assignment" or left.type == "identifier":
                    if left.type == "identifier":
                        events.append((node.end_byte, text(left), node, left))
                elif left.type in ("pattern_list", "tuple_pattern", "list_pattern"):
                    for ident in left.named_children:
                        if ident.type == "identifier":
                            events.append((node.end_byte, text(ident), node, left))
            elif node.type in ("for_statement", "for_in_clause"):
                left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
                for ident in walk(left) if left is not None else ():
                    if ident.type == "identifier":
                        events.append((left.end_byte, text(ident), node, left))
        events.sort(key=lambda e: e[0])
        return [e[0] for e in events], [(e[1], e[2], e[3]) for e in events]

    def _assigned_kind(self, assignment: Node, fn: Function, depth: int) -> Kind:
        if assignment.type in ("for_statement", "for_in_clause"):
            source = self._kind(assignment.child_by_field_name("right"), fn, depth + 1)
            return source if source in (Kind.META, Kind.INPUT, Kind.FULL, Kind.PART) else Kind.OTHER
        right = assignment.child_by_field_name("right")
        kind = self._kind(right, fn, depth + 1)
        if assignment.type == "augmented_assignment":
            kind = max(kind, self._kind(assignment.child_by_field_name("left"), fn, depth + 1))
        return kind

    def _name_kind(self, name: str, node: Node, fn: Function, depth: int) -> Kind:
        positions, events = self._events.get(fn.qualname, ([], []))
        index = bisect.bisect_left(positions, node.start_byte) - 1
        while index >= 0:
            event_name, assignment, _ = events[index]
            if event_name == name and not (assignment.start_byte <= node.start_byte < assignment.end_byte):
                return self._assigned_kind(assignment, fn, depth)
            index -= 1
        if name in self._params.get(fn.qualname, {}):
            return self._params[fn.qualname][name]
        if name in fn.params:
            return Kind.OTHER
        if name in self.module.aliases or name in self.module.functions or name in self.module.classes:
            return Kind.META
        return Kind.OTHER

    # -- expressions ---------------------------------------------------------------------------
    def _kind(self, node: Node | None, fn: Function | None, depth: int) -> Kind:
        if node is None or fn is None or depth > 40:
            return Kind.OTHER
        key = (fn.qualname, node.start_byte, node.end_byte, node.type)
        if key not in self._memo:
            self._memo[key] = self._compute_kind(unparen(node), fn, depth)
        return self._memo[key]

    def _compute_kind(self, node: Node, fn: Function, depth: int) -> Kind:
        kind_of = node.type
        if kind_of in _NUMERIC_LITERALS or kind_of in ("comparison_operator", "not_operator", "lambda"):
            return Kind.META if kind_of != "lambda" else Kind.OTHER
        if kind_of == "identifier":
            return self._name_kind(text(node), node, fn, depth)
        if kind_of == "attribute":
            return self._attribute_kind(node, fn, depth)
        if kind_of == "subscript":
            return self._kind(node.child_by_field_name("value"), fn, depth + 1)
        if kind_of in ("binary_operator", "boolean_operator"):
            left = self._kind(node.child_by_field_name("left"), fn, depth + 1)
            right = self._kind(node.child_by_field_name("right"), fn, depth + 1)
            if text(node.child_by_field_name("operator")) == "@":
                return Kind.PART
            if kind_of == "boolean_operator":
                return max(left, right)  # `a or b` is one of its operands
            return min(max(left, right), Kind.FULL)  # arithmetic makes a new tensor, never the input itself
        if kind_of == "unary_operator":
            operand = self._kind(node.child_by_field_name("argument") or node.named_children[-1], fn, depth + 1)
            return min(operand, Kind.FULL)
        if kind_of == "conditional_expression":
            branches = [c for c in node.named_children]
            return max((self._kind(c, fn, depth + 1) for c in (branches[0], branches[-1])), default=Kind.OTHER)
        if kind_of in ("tuple", "list", "expression_list"):
            return max((self._kind(c, fn, depth + 1) for c in node.named_children), default=Kind.META)
        if kind_of == "call":
            return self._call_kind(node, fn, depth)
        return Kind.OTHER

    def _attribute_kind(self, node: Node, fn: Function, depth: int) -> Kind:
        obj, attr = node.child_by_field_name("object"), text(node.child_by_field_name("attribute"))
        if attr in ops.META_ATTRIBUTES:
            return Kind.META
        if self.module.resolve(node) is not None:
            return Kind.META  # a module attribute such as torch.float32
        if text(obj) == "self":
            return self.self_attribute_kind(fn, attr)
        base = self._kind(obj, fn, depth + 1)
        if text(obj).startswith("self.") and base == Kind.PART:
            # self.linear.weight is a tensor; self.linear.out_features a number
            return Kind.PART if any(t in attr for t in _LAYER_TENSORS) else Kind.META
        if attr in ("T", "mT", "H", "data", "real", "imag", "grad"):
            return base
        return Kind.META if base == Kind.META else Kind.OTHER

    def _call_kind(self, node: Node, fn: Function, depth: int) -> Kind:
        callee = node.child_by_field_name("function")
        positional, keywords = call_args(node)
        qualified = self.module.resolve(callee)
        if qualified is not None:
            name = qualified.split(".")[-1]
            if qualified.startswith(_META_MODULES) or qualified.startswith("torch.cuda"):
                return Kind.META
            if qualified.startswith("torch"):
                if name in ops.LIKE_ALLOCATORS:
                    return Kind.FULL if positional and self._kind(positional[0], fn, depth + 1).is_full_size else Kind.PART
                if name in ops.ALLOCATORS:
                    return Kind.FULL if self._shape_of_full(positional, fn, depth) else Kind.PART
                if name in ops.GLUE_FUNCTIONS or name in ops.VIEW_METHODS:
                    return max((self._kind(a, fn, depth + 1) for a in positional), default=Kind.PART)
                return self._result_kind(ops.torch_function_family(qualified), positional, fn, depth)
            return Kind.OTHER
        if callee.type == "identifier":
            name = text(callee)
            if name in _META_BUILTINS:
                return Kind.META
            return Kind.OTHER
        if callee.type == "attribute":
            method = text(callee.child_by_field_name("attribute"))
            receiver = callee.child_by_field_name("object")
            receiver_kind = self._kind(receiver, fn, depth + 1)
            if method in ops.META_METHODS:
                return Kind.META if method != "tolist" else Kind.OTHER
            if method in ("new_empty", "new_zeros", "new_ones", "new_full"):
                return Kind.FULL if self._shape_of_full(positional, fn, depth) else Kind.PART
            if method in ("clone", "copy"):
                return Kind.FULL if receiver_kind.is_full_size else receiver_kind
            if method in ops.VIEW_METHODS:
                return receiver_kind
            family = ops.method_family(method)
            if family is not None and receiver_kind >= Kind.OTHER:
                return self._result_kind(family, [receiver, *positional], fn, depth)
            return Kind.OTHER if receiver_kind != Kind.META else Kind.META
        return Kind.OTHER

    def _result_kind(self, family: str | None, operands: list[Node], fn: Function, depth: int) -> Kind:
        """What a compute op produces: same size for elementwise ops, smaller for the rest."""
        source = max((self._kind(a, fn, depth + 1) for a in operands), default=Kind.OTHER)
        if family in ("activation", "elementwise", "arith", "softmax", "norm", "scan", "movement") and source.is_full_size:
            return Kind.FULL
        return Kind.PART

    def _shape_of_full(self, positional: list[Node], fn: Function, depth: int) -> bool:
        """True when an allocation's shape is an input's whole shape (`x.shape`, `x.size()`, `*x.shape`)."""
        if len(positional) != 1:
            return False
        arg = unparen(positional[0])
        if arg.type == "list_splat":
            arg = arg.named_children[0]
        if arg.type == "attribute" and text(arg.child_by_field_name("attribute")) == "shape":
            return self._kind(arg.child_by_field_name("object"), fn, depth + 1).is_full_size
        if arg.type == "call":
            callee = arg.child_by_field_name("function")
            if callee.type == "attribute" and text(callee.child_by_field_name("attribute")) == "size" \
                    and not call_args(arg)[0]:
                return self._kind(callee.child_by_field_name("object"), fn, depth + 1).is_full_size
        return False

    # -- call-site flow ------------------------------------------------------------------------
    def _flow_arguments(self, entry: Function | None) -> None:
        """Give helper parameters the kinds of the arguments passed at their call sites."""
        by_name = {f.qualname: f for f in self.functions}
        for _ in range(3):
            for fn in self.functions:
                for node in walk(fn.body):
                    if node.type != "call":
                        continue
                    target = self._call_target(fn, node.child_by_field_name("function"), by_name)
                    if target is None or target is entry:
                        continue
                    positional, keywords = call_args(node)
                    params = self._params.setdefault(target.qualname, {})
                    for name, arg in [*zip(target.params, positional), *keywords.items()]:
                        if arg.type in ("list_splat", "dictionary_splat"):
                            continue
                        params[name] = max(params.get(name, Kind.META), self.kind(arg, fn))
            self._memo.clear()  # parameter kinds changed

    def _call_target(self, fn: Function, callee: Node, by_name: dict[str, Function]) -> Function | None:
        if callee.type == "identifier":
            return by_name.get(text(callee))
        if callee.type == "attribute" and text(callee.child_by_field_name("object")) in ("self", "cls") and fn.cls:
            found = self.module.method(fn.cls, text(callee.child_by_field_name("attribute")))
            return by_name.get(found.qualname) if found else None
        return None
