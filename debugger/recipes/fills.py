"""Fill-value recipes: what the masked-off lanes of a load contribute to the reductions that follow.

`other_identity` sets a masked load's `other=` to the identity of the first reduction it feeds
(-inf for max, +inf for min, 0 for sum, 1 for prod). `mask_padded_lanes` covers what a fill value
cannot: a padded lane that the elementwise math turns into a non-identity before a later reduction
(the `x - mean` of a variance). It evaluates the expression a reduction consumes with the padded
lane's value substituted, and wraps the input in `tl.where(mask, ..., identity)` only where the lane
would not vanish by itself.
"""
from __future__ import annotations

import math

from debugger.recipes.base import Recipe
from debugger.recipes.indexing import (IDENTITY, REDUCTIONS, fill_kind, load_var, mask_arg, other_arg,
                                       reductions_of)
from debugger.recipes.syntax import Kernel, Source
from debugger.source.edits import Edit
from debugger.source.tree import Node, call_args, identifiers, last_arg_end, line, number, text, unparen, walk

IDENTITY_VALUE = {"max": -math.inf, "min": math.inf, "sum": 0.0, "prod": 1.0}
UNKNOWN = object()


class LaneEval:
    """Evaluate an expression for one padded lane: the load's variable holds its fill value, other
    names an arbitrary finite value; None when the expression is beyond this small evaluator."""

    FUNCS = {"tl.exp": math.exp, "tl.exp2": lambda v: 2.0 ** v, "tl.log": math.log, "tl.log2": math.log2,
             "tl.sqrt": math.sqrt, "tl.abs": abs, "tl.rsqrt": lambda v: 1 / math.sqrt(v),
             "tl.maximum": max, "tl.minimum": min, "tl.sigmoid": lambda v: 1 / (1 + math.exp(-v)),
             "tl.fma": lambda a, b, c: a * b + c}

    def __init__(self, k: Kernel, var: str, fill: float, mask_text: str):
        self.k, self.var, self.fill, self.mask = k, var, fill, mask_text.replace(" ", "")
        self.derived_names: set[str] = set()

    def value(self, node: Node, depth: int = 0):
        if depth > 12:
            return UNKNOWN
        node = unparen(node)
        t = node.type
        try:
            if t in ("integer", "float"):
                return float(text(node))
            if t == "identifier":
                return self._name(text(node), depth, node.start_byte)
            if t == "unary_operator":
                v = self.value(node.named_children[0], depth + 1)
                return UNKNOWN if v is UNKNOWN else -v
            if t == "binary_operator":
                return self._binary(node, depth)
            if t == "subscript":
                return self.value(node.child_by_field_name("value"), depth + 1)
            if t == "call":
                return self._call(node, depth)
        except (ArithmeticError, ValueError, TypeError):
            return UNKNOWN
        return UNKNOWN

    def _name(self, name: str, depth: int, at: int):
        """The value of `name` where it is read at byte `at`: from its last assignment before
        that point (straight-line code; a loop-carried name is beyond this evaluator)."""
        if self.var not in self.k.deps.closure({name}):
            return 0.7  # an arbitrary finite value for names that do not depend on the padded lane
        defs = [(st, rhs) for st, rhs in self.k.deps.defs.get(name, []) if st.end_byte <= at]
        if not defs:
            return self.fill if name == self.var else UNKNOWN
        stmt, rhs = max(defs, key=lambda d: d[0].start_byte)
        if stmt.type != "assignment":
            return UNKNOWN
        if name == self.var and self.k.src.calls(rhs, "tl.load"):
            return self.fill
        return self.value(rhs, depth + 1)

    def _binary(self, node: Node, depth: int):
        a = self.value(node.child_by_field_name("left"), depth + 1)
        b = self.value(node.child_by_field_name("right"), depth + 1)
        if a is UNKNOWN or b is UNKNOWN:
            return UNKNOWN
        op = text(node.child_by_field_name("operator"))
        ops = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a / b,
               "**": lambda: a ** b}
        return ops[op]() if op in ops else UNKNOWN

    def _call(self, node: Node, depth: int):
        name = self.k.src.call_name(node)
        pos, _ = call_args(node)
        if name is None:
            f = node.child_by_field_name("function")
            if f.type == "attribute" and text(f.child_by_field_name("attribute")) == "to":
                return self.value(f.child_by_field_name("object"), depth + 1)
            return UNKNOWN
        if name == "tl.where" and len(pos) == 3:
            if text(pos[0]).replace(" ", "") == self.mask:
                return self.value(pos[2], depth + 1)
            return UNKNOWN
        if name in self.FUNCS:
            args = [self.value(p, depth + 1) for p in pos]
            return UNKNOWN if any(a is UNKNOWN for a in args) else self.FUNCS[name](*args)
        return UNKNOWN


def masked_loads(k: Kernel):
    """(load call, assigned variable, mask node) of the masked loads bound to a variable."""
    for c in k.calls("tl.load"):
        m = mask_arg(k.src, c)
        var = load_var(c)
        if m is not None and var is not None:
            yield c, var, m


def set_other(call: Node, value: str) -> Edit | None:
    cur = other_arg(call)
    if cur is not None:
        return Edit.replace(cur, value)
    at = last_arg_end(call)
    return Edit.insert(at, f", other={value}") if at is not None else None


class OtherIdentity(Recipe):
    id = "other_identity"
    bug_classes = ("masked_fill_value",)
    symptoms = ("other_zero_before_max", "whole_rows_wrong", "fails_negative_inputs", "intermediate_wrong",
                "tail_block_wrong", "large_error")
    description = "A masked load's other= becomes the identity of the reduction it feeds."

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            edits = []
            for c, var, _ in masked_loads(k):
                reds = reductions_of(k, var, after=c.start_byte)
                if not reds:
                    continue
                kind = reds[0].kind
                if fill_kind(other_arg(c)) == kind or _vanishes(k, c, var, reds[0]):
                    continue
                edits.append((c, set_other(c, IDENTITY[kind]), kind))
            if not edits:
                continue
            yield self.patch(s, [e for _, e, _ in edits],
                             f"fill masked lanes with the reduction identity in {k.name}")
            if len(edits) > 1:
                for c, e, kind in edits:
                    yield self.patch(s, [e], f"other={IDENTITY[kind]} for the load at line {line(c)}")


class MaskPaddedLanes(Recipe):
    id = "mask_padded_lanes"
    bug_classes = ("masked_fill_value", "normalization_formula")
    symptoms = ("intermediate_wrong", "whole_rows_wrong", "divides_by_block", "large_error",
                "tail_block_wrong")
    description = "Padded lanes reach a reduction as non-identity values: wrap its input in tl.where(mask, x, id)."

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            edits = []
            for c, var, mask in masked_loads(k):
                fill = other_value(c)
                for red in reductions_of(k, var, after=c.start_byte):
                    arg, kind = red.input, red.kind
                    if red.node.type != "call" or s.call_name(red.node) not in REDUCTIONS:
                        continue  # a running accumulation: its fill is other_identity's business
                    if any(n.type == "call" and k.src.call_name(n) in REDUCTIONS
                                          for n in walk(arg)):
                        continue
                    if _through_reduction(k, var, arg):
                        continue
                    v = LaneEval(k, var, fill, text(mask)).value(arg) if fill is not None else UNKNOWN
                    if v is not UNKNOWN and _is_identity(v, kind):
                        continue
                    edits.append(Edit.replace(arg, f"{s.tl}.where({text(mask)}, {text(arg)}, "
                                                   f"{IDENTITY[kind]})"))
            yield self.patch(s, edits, f"exclude padded lanes from the reductions in {k.name}")
            if len(edits) > 1:
                for e in edits:
                    yield self.patch(s, [e], "exclude padded lanes from one reduction")


def other_value(call: Node) -> float | None:
    """The fill value of a masked load as a float (0.0 when absent: the usual hardware result)."""
    o = other_arg(call)
    if o is None:
        return 0.0
    kind = fill_kind(o)
    if kind in ("max", "min"):
        return IDENTITY_VALUE[kind]
    return number(o)


def _vanishes(k: Kernel, load: Node, var: str, red) -> bool:
    """The padded lane already reaches the reduction as its identity (a tl.where on the mask)."""
    if red.node.type != "call":
        return False
    mask = mask_arg(k.src, load)
    v = LaneEval(k, var, other_value(load), text(mask)).value(red.input)
    return v is not UNKNOWN and _is_identity(v, red.kind)


def _is_identity(v: float, kind: str) -> bool:
    return v == IDENTITY_VALUE[kind]


def _through_reduction(k: Kernel, var: str, arg: Node) -> bool:
    """The reduction input reaches `var` only through another reduction (a different shape)."""
    direct = {var}
    changed = True
    while changed:
        changed = False
        for name, defs in k.deps.defs.items():
            if name in direct:
                continue
            for _, rhs in defs:
                has_red = any(n.type == "call" and k.src.call_name(n) in (*REDUCTIONS, "tl.dot")
                              for n in walk(rhs))
                if not has_red and identifiers(rhs) & direct:
                    direct.add(name)
                    changed = True
                    break
    return not (identifiers(arg) & direct)
