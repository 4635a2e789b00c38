"""cuda_float_accumulator: a half/bfloat16 local summed in a loop (fact `cuda_half_accumulator`).

The sum moves to a float shadow: `float acc_f = to_float(acc);` before the loop, each accumulation in
the loop adds in float (`acc += e` / `acc = acc + e` / `acc = __hadd(acc, e)` -> `acc_f += to_float(e)`,
`acc = __hfma(a, b, acc)` -> `acc_f += to_float(a) * to_float(b)`, `-` likewise), and after the loop
`acc = <half>(acc_f);`, so every other use of `acc` keeps its type. That matters: PyTorch builds
extensions with `__CUDA_NO_HALF_CONVERSIONS__`, so a `float` that meets a `__half` does not compile.
`to_float` is an overload pair written once into the unit (float and __half, or float and
__nv_bfloat16, through __half2float / __bfloat162float); for c10::Half / at::Half it is
`static_cast<float>`. Vector types (`half2`) and sums read inside their loop are left alone.
"""
from __future__ import annotations

import re

from tree_sitter import Node

from debugger.lang.cuda.access import inside, loops
from debugger.lang.cuda.facts import HALF
from debugger.lang.cuda.recipes.base import (CudaRecipe, UnitEdit, indent_at, line_start, starts_line,
                                             top_statement)
from debugger.lang.cuda.unit import Function, Unit, call_args, identifiers
from debugger.source.tree import text, unparen, walk

VECTOR = re.compile(r"2\b|2_t\b")
HELPER = "kdebug_to_float"


def conversions(type_text: str) -> tuple[str, str, str | None] | None:
    """(to float, back to the type, the helper's definition) for an accumulator type."""
    if re.search(r"bfloat16", type_text, re.I) and "::" not in type_text:
        helper = (f"__device__ __forceinline__ float {HELPER}(float v) {{ return v; }}\n"
                  f"__device__ __forceinline__ float {HELPER}(__nv_bfloat16 v) {{ return __bfloat162float(v); }}\n")
        return HELPER, "__float2bfloat16", helper
    if "::" in type_text:  # c10::Half, at::Half, c10::BFloat16: conversions of their own
        return "static_cast<float>", f"static_cast<{type_text.strip()}>", None
    helper = (f"__device__ __forceinline__ float {HELPER}(float v) {{ return v; }}\n"
              f"__device__ __forceinline__ float {HELPER}(__half v) {{ return __half2float(v); }}\n")
    return HELPER, "__float2half", helper


def accumulation(a: Node, name: str, shadow: str, conv: str) -> str | None:
    """The float form of one accumulation `a` into `name` (None: not a shape this recipe knows)."""
    f = lambda n: f"{conv}({text(n)})"  # noqa: E731
    op = text(a.child_by_field_name("operator"))
    right = unparen(a.child_by_field_name("right"))
    if op in ("+=", "-="):
        return f"{shadow} {op} {f(right)}"
    if op != "=":
        return None
    if right.type == "binary_expression" and text(right.child_by_field_name("operator")) in ("+", "-"):
        left, other = unparen(right.child_by_field_name("left")), unparen(right.child_by_field_name("right"))
        sign = text(right.child_by_field_name("operator"))
        if text(left) == name and name not in identifiers(other):
            return f"{shadow} {sign}= {f(other)}"
        if sign == "+" and text(other) == name and name not in identifiers(left):
            return f"{shadow} += {f(left)}"
    if right.type == "call_expression":
        callee = text(right.child_by_field_name("function")).split("::")[-1]
        args = [unparen(x) for x in call_args(right)]
        if callee in ("__hadd", "__hadd_rn") and len(args) == 2 and name in (text(args[0]), text(args[1])):
            return f"{shadow} += {f(args[1] if text(args[0]) == name else args[0])}"
        if callee == "__hsub" and len(args) == 2 and text(args[0]) == name:
            return f"{shadow} -= {f(args[1])}"
        if callee == "__hfma" and len(args) == 3 and text(args[2]) == name:
            return f"{shadow} += {f(args[0])} * {f(args[1])}"
    return None


def _fresh(fn: Function, base: str) -> str:
    used = {text(n) for n in walk(fn.node) if n.type == "identifier"}
    name, k = f"{base}_f", 2
    while name in used:
        name, k = f"{base}_f{k}", k + 1
    return name


def _top_level(node: Node) -> Node:
    """The translation unit's child holding `node` (a template declaration around a kernel, a namespace)."""
    while node.parent is not None and node.parent.parent is not None:
        node = node.parent
    return node


def widen_edits(fn: Function, unit: Unit) -> list[tuple[list[UnitEdit], str]]:
    data = unit.source.text.encode()
    out = []
    for name, decl in fn.declared.items():
        type_node = decl.child_by_field_name("type")
        type_text = text(type_node)
        if type_node is None or not HALF.search(type_text) or VECTOR.search(type_text) or name in fn.shared:
            continue
        sums = [a for a in fn.nodes("assignment_expression")
                if text(unparen(a.child_by_field_name("left"))) == name and loops(a, fn)
                and (text(a.child_by_field_name("operator")) in ("+=", "-=")
                     or name in identifiers(a.child_by_field_name("right")))]
        if not sums:
            continue
        block = decl.parent
        loop = top_statement(loops(sums[0], fn)[-1], block) if block is not None else None
        conv = conversions(type_text)
        if loop is None or loop.type not in ("for_statement", "while_statement", "do_statement") or conv is None \
                or not all(inside(a, loop) for a in sums):
            continue
        to_float, back, helper = conv
        shadow = _fresh(fn, name)
        edits: list[UnitEdit] = []
        for a in sums:
            new = accumulation(a, name, shadow, to_float)
            if new is None:
                break
            edits.append((a.start_byte, a.end_byte, new))
        else:
            reads = [n for n in walk(loop) if n.type == "identifier" and text(n) == name
                     and not any(inside(n, a) for a in sums)]
            if reads:
                continue  # the half value is read inside the loop: the shadow would leave it stale
            init, reset = f"float {shadow} = {to_float}({name});", f"{name} = {back}({shadow});"
            if starts_line(data, loop.start_byte):
                indent, at = indent_at(data, loop.start_byte), line_start(data, loop.start_byte)
                edits += [(at, at, f"{indent}{init}\n"), (loop.end_byte, loop.end_byte, f"\n{indent}{reset}")]
            else:
                edits += [(loop.start_byte, loop.start_byte, init + " "), (loop.end_byte, loop.end_byte, " " + reset)]
            if helper is not None and HELPER not in unit.source.text:
                first = _top_level(min((f.node for f in unit.functions if f.kind != "host"),
                                       key=lambda n: n.start_byte))
                edits.append((line_start(data, first.start_byte), line_start(data, first.start_byte), helper))
            out.append((edits, f"accumulate {name} in float ({shadow}), not {type_text}, in {fn.name}"))
    return out


class CudaFloatAccumulator(CudaRecipe):
    id = "cuda_float_accumulator"
    bug_classes = ("low_precision_accumulator",)
    symptoms = ("precision_noise", "fails_large_magnitude")
    description = "CUDA: accumulate in float instead of half/bfloat16"

    def unit_fixes(self, unit: Unit, hints):
        for fn in unit.kernels:
            yield from widen_edits(fn, unit)
