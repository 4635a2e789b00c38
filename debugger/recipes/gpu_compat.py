"""Recipes for Triton the CPU interpreter runs but a GPU build rejects (class gpu_incompatible).

The interpreter executes a kernel's Python body with numpy, so it accepts what Triton's code generator
refuses. Two mechanical rewrites, each a compile error on sm_90 before and a kernel that compiles
and computes the same values after:
- math functions triton.language does not have (numpy, which the interpreter calls, has them):
  `tl.math.trunc(x)` -> `tl.where(x >= 0, tl.floor(x), tl.ceil(x))`, `tl.math.tanh(x)` ->
  `2 * tl.sigmoid(2 * x) - 1` (libdevice's would fail on the interpreter).
- A value whose type differs between the branches of a runtime `if` ("Mismatched type for NAME
  between then block (fp32) and else block (int1)") or between a loop's entry and its body
  ("Loop-carried variable NAME has initial type int32 but is re-assigned to fp32"): the other
  assignment cast to the type the code computes (`.to(tl.float32)`; a number literal as `tl.full`).
  The compiler's message (the run's `gpu_errors` hint, from debugger/gpu_check.py on the CPU or a
  compile_error check on a GPU) names the variable and both types; without it nothing is proposed.
"""
from __future__ import annotations

import re

from debugger.recipes.base import Recipe
from debugger.recipes.syntax import Source
from debugger.source.edits import Edit
from debugger.source.tree import Node, line, target_names, text, walk

# Source.canonical folds tl.math.NAME into tl.NAME. x: the argument's text, parenthesised when compound.
MISSING = {"tl.trunc": "{tl}.where({x} >= 0, {tl}.floor({x}), {tl}.ceil({x}))",
           "tl.tanh": "(2.0 * {tl}.sigmoid(2.0 * {x}) - 1.0)"}
BRANCH = re.compile(r"Mismatched type for (\w+) between then block \((.+?)\) and else block \((.+?)\)")
LOOP = re.compile(r"Loop[- ]carried variable (\w+) has initial type (.+?) but is re-assigned to (.+?) in loop")
DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp64": "float64", "i1": "int1",
          "int1": "int1", "i8": "int8", "i16": "int16", "i32": "int32", "int32": "int32", "i64": "int64",
          "int64": "int64", "u8": "uint8", "u32": "uint32"}


def _simple(node: Node) -> bool:
    return node.type in ("identifier", "attribute", "call", "subscript", "parenthesized_expression", "integer",
                         "float")


class MissingMathFunction(Recipe):
    id = "tl_math_substitute"
    bug_classes = ("gpu_incompatible",)
    symptoms = ("gpu_compile_error",)
    description = ("tl.math.trunc / tl.math.tanh do not exist for a GPU build: the same value from functions "
                   "that do (floor/ceil by sign; 2 * sigmoid(2x) - 1).")

    def _propose(self, s: Source, hints: dict):
        edits, lines = [], []
        tl = _tl(s)
        for k in s.kernels:
            for call in k.calls(*MISSING):
                args = [a for a in call.child_by_field_name("arguments").named_children if a.type != "comment"]
                if len(args) != 1 or args[0].type == "keyword_argument":
                    continue
                x = text(args[0]) if _simple(args[0]) else f"({text(args[0])})"
                edits.append(Edit.replace(call, MISSING[s.call_name(call)].format(tl=tl, x=x)))
                lines.append(str(line(call)))
        if edits:
            yield self.patch(s, edits, f"tl.math functions a GPU build lacks rewritten at line(s) {', '.join(lines)}")


def _tl(s: Source) -> str:
    """The name triton.language goes by in the candidate (tl unless only another alias is imported)."""
    if re.search(r"\bas\s+tl\b", s.src) or "tl" not in s.aliases:
        return "tl"
    return next((a for a, c in s.aliases.items() if c == "tl" and a != "tl"), "tl")


def _dtype(ty: str) -> tuple[str | None, bool]:
    """('float32', is_block) from a Triton type as printed: 'fp32', "<['1024'], fp32>", 'pointer<fp32>'."""
    t = ty.strip()
    if "pointer" in t:
        return None, False
    block = t.startswith("<")
    name = t.strip("<>").split(",")[-1].strip()
    return DTYPES.get(name), block


def _assignments(node: Node, name: str) -> list[Node]:
    """Plain `name = value` statements (assignment nodes) under `node`, not in nested functions."""
    out = []
    for n in walk(node, skip_functions=True):
        if n.type == "assignment" and target_names(n.child_by_field_name("left")) == [name] \
                and n.child_by_field_name("left").type == "identifier":
            out.append(n)
    return out


def _cast(s: Source, assign: Node, dtype: str, tl: str) -> Edit | None:
    rhs = assign.child_by_field_name("right")
    if rhs is None or text(rhs).replace(" ", "").endswith((f".to({tl}.{dtype})", f",{tl}.{dtype})")):
        return None  # cast already (a stale message must not stack casts)
    if rhs.type in ("integer", "float", "true", "false", "unary_operator") and \
            re.fullmatch(r"-?\s*[\d.eE+-]+|True|False", text(rhs)):
        return Edit.replace(rhs, f"{tl}.full([], {text(rhs)}, {tl}.{dtype})")
    value = text(rhs) if _simple(rhs) else f"({text(rhs)})"
    return Edit.replace(rhs, f"{value}.to({tl}.{dtype})")


def _target(a: str | None, b: str | None) -> str | None:
    """The type both sides should have: the floating one, else the wider integer."""
    if a is None or b is None:
        return None
    for t in (a, b):
        if t.startswith(("float", "bfloat")):
            return t
    order = ["int1", "int8", "uint8", "int16", "int32", "uint32", "int64"]
    return max((a, b), key=lambda t: order.index(t) if t in order else -1)


class UnifyBranchTypes(Recipe):
    id = "unify_branch_types"
    bug_classes = ("gpu_incompatible",)
    symptoms = ("gpu_compile_error",)
    description = ("A value typed differently in the branches of a runtime if (or on entry to a loop and in "
                   "its body): cast the other assignment to the type the code computes.")

    def _propose(self, s: Source, hints: dict):
        errors = list(hints.get("gpu_errors") or []) + list(hints.get("errors") or [])
        tl = _tl(s)
        for err in errors:
            m = BRANCH.search(err)
            if m:
                yield from self._branch(s, tl, m.group(1), _dtype(m.group(2)), _dtype(m.group(3)))
            m = LOOP.search(err)
            if m:
                yield from self._loop(s, tl, m.group(1), _dtype(m.group(2)), _dtype(m.group(3)))

    def _branch(self, s: Source, tl: str, name: str, then_ty, else_ty):
        target = _target(then_ty[0], else_ty[0])
        if target is None or then_ty[1] != else_ty[1]:
            return
        cast_then = then_ty[0] != target
        for k in s.kernels:
            for stmt in k.nodes("if_statement"):
                then = stmt.child_by_field_name("consequence")
                alt = next((c for c in stmt.children if c.type == "else_clause"), None)
                if then is None or not _assignments(then, name):
                    continue
                if cast_then:
                    sites = _assignments(then, name)
                elif alt is not None and _assignments(alt, name):
                    sites = _assignments(alt, name)
                else:  # no else: the value before the if is the else block's
                    before = [a for a in _assignments(k.body, name) if a.end_byte <= stmt.start_byte]
                    sites = before[-1:]
                edits = [_cast(s, a, target, tl) for a in sites]
                yield self.patch(s, edits, f"{name} cast to {target} in the "
                                           f"{'then' if cast_then else 'else'} branch of the if at line {line(stmt)}")

    def _loop(self, s: Source, tl: str, name: str, initial, body):
        if initial[0] is None or body[0] is None or initial[1] or body[1]:
            return  # scalars only: a block of another shape needs its shape, which the message does not give
        target = _target(initial[0], body[0])
        if target != body[0]:
            return
        for k in s.kernels:
            for loop in k.nodes("for_statement", "while_statement"):
                inside = {a.start_byte for a in _assignments(loop, name)}
                augmented = [n for n in walk(loop) if n.type == "augmented_assignment"
                             and text(n.child_by_field_name("left")) == name]
                if not inside and not augmented:
                    continue
                before = [a for a in _assignments(k.body, name) if a.end_byte <= loop.start_byte
                          and a.start_byte not in inside]
                if before:
                    yield self.patch(s, [_cast(s, before[-1], target, tl)],
                                     f"{name} starts as {target} before the loop at line {line(loop)}")
