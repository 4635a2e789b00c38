"""Memory accesses inside a CUDA kernel and the conditions that guard them.

An `Access` is one read or write of global memory (a pointer parameter, or a local pointer made from
one: `x[i]`, `reinterpret_cast<float4*>(x)[i]`, `*(x + i)`, `&x[i]` handed to an atomic) or of a
`__shared__` buffer. `guards(fn, node)` names what bounds a node: the relational comparisons of the
enclosing `if`/`while`/`for` conditions, `?:` and `&&` operands, and of earlier `if (...) return;`
(or `continue`/`break`) exits, with whether each was compared against a literal only.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from debugger.lang.cuda.unit import Function, call_args, identifiers
from debugger.source.tree import ancestors, text, unparen, walk

RELATIONAL = {"<", "<=", ">", ">="}
ATOMIC = re.compile(r"^atomic\w+$|^__\w*atomic\w*$")
_EXITS = ("return_statement", "continue_statement", "break_statement")


@dataclass(frozen=True)
class Access:
    node: Node         # the subscript (or dereference) expression
    base: str          # the pointer or shared buffer
    index: Node        # the index expression (for a dereference: the address)
    store: bool
    atomic: bool
    shared: bool

    @property
    def index_text(self) -> str:
        return re.sub(r"\s+", "", text(self.index))

    def index_names(self, fn: Function) -> set[str]:
        """Names the index reads; for a local pointer, also what the pointer's offset reads."""
        names = identifiers(self.index) - {self.base}
        for value in fn.defs.get(self.base, []) if self.base not in {p.name for p in fn.params} else []:
            names |= identifiers(value) - fn.global_pointers
        return names


def inside(node: Node, outer: Node | None) -> bool:
    return outer is not None and outer.start_byte <= node.start_byte and node.end_byte <= outer.end_byte


def _base(sub: Node) -> tuple[Node, list[Node]]:
    """The innermost argument of a subscript chain `a[i][j]` and its index lists, outermost last."""
    indices = []
    while sub.type == "subscript_expression":
        indices.append(sub.child_by_field_name("indices"))
        sub = unparen(sub.child_by_field_name("argument"))
    return sub, indices[::-1]


def _is_write(node: Node) -> tuple[bool, bool]:
    """(written, through an atomic) for an lvalue-like node."""
    parent = node.parent
    while parent is not None and parent.type == "parenthesized_expression":
        node, parent = parent, parent.parent
    if parent is None:
        return False, False
    if parent.type == "assignment_expression" and inside(node, parent.child_by_field_name("left")):
        return True, False
    if parent.type == "update_expression":
        return True, False
    if parent.type == "pointer_expression" and text(parent).startswith("&"):
        call = parent.parent.parent if parent.parent is not None else None
        if call is not None and call.type == "call_expression":
            name = text(call.child_by_field_name("function")).split("::")[-1]
            args = call_args(call)
            if ATOMIC.match(name) and args and args[0] == parent:
                return True, True
    return False, False


def accesses(fn: Function) -> list[Access]:
    """Global and shared accesses of a kernel, in source order."""
    out = []
    pointers, shared = fn.global_pointers, fn.shared
    for n in fn.nodes("subscript_expression", "pointer_expression", "call_expression"):
        if n.type == "subscript_expression":
            if n.parent is not None and n.parent.type == "subscript_expression" and \
                    n.parent.child_by_field_name("argument") == n:
                continue  # the inner part of a[i][j]
            base, indices = _base(n)
            names = identifiers(base)
            hit = sorted(names & pointers) or sorted(names & shared)
            if not hit:
                continue
            store, atomic = _is_write(n)
            out.append(Access(n, hit[0], indices[-1] if len(indices) == 1 else n, store, atomic,
                              hit[0] in shared and hit[0] not in pointers))
        elif n.type == "pointer_expression" and text(n).startswith("*"):
            arg = n.child_by_field_name("argument")
            hit = sorted(identifiers(arg) & pointers)
            if hit and unparen(arg).type == "binary_expression":
                store, atomic = _is_write(n)
                out.append(Access(n, hit[0], arg, store, atomic, False))
        else:  # atomicAdd(out + i, v)
            name = text(n.child_by_field_name("function")).split("::")[-1]
            args = call_args(n)
            if ATOMIC.match(name) and args and unparen(args[0]).type == "binary_expression":
                hit = sorted(identifiers(args[0]) & pointers)
                if hit:
                    out.append(Access(n, hit[0], args[0], True, True, False))
    return out


def _relational(cond: Node | None) -> dict[str, bool]:
    """Names compared by <, <=, >, >= in a condition -> compared against number literals only."""
    out: dict[str, bool] = {}
    if cond is None:
        return out
    for b in walk(cond):
        if b.type != "binary_expression" or text(b.child_by_field_name("operator")) not in RELATIONAL:
            continue
        left, right = unparen(b.child_by_field_name("left")), unparen(b.child_by_field_name("right"))
        for side, other in ((left, right), (right, left)):
            literal = other.type == "number_literal"
            for name in identifiers(side):
                out[name] = out.get(name, True) and literal
    return out


def _exits(node: Node | None) -> bool:
    return node is not None and (node.type in _EXITS or any(n.type in _EXITS for n in walk(node)))


def guards(fn: Function, node: Node) -> dict[str, bool]:
    """Names bounding `node` (enclosing conditions, earlier early exits) -> compared to literals only."""
    found: dict[str, bool] = {}

    def add(cond):
        for name, literal in _relational(cond).items():
            found[name] = found.get(name, True) and literal

    for a in ancestors(node):
        if a == fn.body:
            break
        if a.type in ("if_statement", "while_statement", "conditional_expression", "for_statement"):
            cond = a.child_by_field_name("condition")
            if not inside(node, cond):
                add(cond)
        elif a.type == "binary_expression" and text(a.child_by_field_name("operator")) == "&&":
            right = a.child_by_field_name("right")
            if inside(node, right):
                add(a.child_by_field_name("left"))
    for stmt in fn.nodes("if_statement"):
        if stmt.end_byte <= node.start_byte and inside(node, stmt.parent) and \
                _exits(stmt.child_by_field_name("consequence")):
            add(stmt.child_by_field_name("condition"))
    return found


def covered(fn: Function, name: str, bounds: dict[str, bool]) -> bool:
    """The thread-derived `name` is bounded: compared itself, or through a name derived from it, or
    through a name it derives from (that one compared to a size, not a literal: `tid < 32` bounds
    nothing global)."""
    if name in bounds:
        return True
    for g, literal in bounds.items():
        if name in fn.closure({g}):
            return True
        if not literal and g in fn.closure({name}) and fn.thread_derived(g):
            return True
    return False


def loops(node: Node, fn: Function) -> list[Node]:
    """The loops enclosing `node` inside the function, innermost first."""
    return [a for a in ancestors(node) if inside(a, fn.body) and a.type in
            ("for_statement", "while_statement", "do_statement")]


GUARDS = ("if_statement", "conditional_expression")


def guards_within(node: Node, lo: int, hi: int) -> list[Node]:
    """The conditions around `node` that lie inside [lo, hi): enclosing `if`s and `?:`s, and the left
    operands of the `&&`s it is the right operand of."""
    out = []
    for a in ancestors(node):
        if a.start_byte < lo:
            break
        if a.type in GUARDS and a.end_byte <= hi:
            out.append(a.child_by_field_name("condition"))
        op = a.child_by_field_name("operator") if a.type == "binary_expression" else None
        if op is not None and op.type == "&&" and inside(node, a.child_by_field_name("right")):
            out.append(a.child_by_field_name("left"))
    return [c for c in out if c is not None]
