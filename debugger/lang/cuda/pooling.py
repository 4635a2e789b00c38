"""CUDA fact of an average pool that divides by the taps it visited: cuda_avgpool_counts_valid.

`sum += x[...]; count++;` inside the window's loops, with the taps outside the input skipped, then
`sum / count`: the average over the valid taps only. PyTorch's AvgPool (count_include_pad=True, the
default every KernelBench problem uses) divides by the whole window, padding included, so windows that
overlap the padding come out too large. Whether the reference includes the padding is not in the
candidate: the fact is descriptive; the recipe (recipes/pooling.py) proposes and the evaluation decides.

`valid_count_averages` returns what the recipe rewrites: the division's divisor and the window's size
from the tap loops' bounds (`for (int k = 0; k < kernel_size; ++k)` gives kernel_size).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from debugger.lang import Fact
from debugger.lang.cuda.access import loops as enclosing_loops
from debugger.lang.cuda.unit import Function
from debugger.source.tree import ancestors, text, unparen, walk


@dataclass(frozen=True)
class ValidCountAverage:
    division: Node   # `sum / count`
    divisor: Node    # `count` (or `(float)count`)
    count: str
    window: str      # the window's size: the product of the tap loops' bounds


def _increments(fn: Function, name: str) -> list[Node]:
    out = []
    for n in fn.nodes("update_expression", "assignment_expression"):
        if n.type == "update_expression" and text(n).replace(" ", "") in (f"{name}++", f"++{name}"):
            out.append(n)
        elif n.type == "assignment_expression" and text(unparen(n.child_by_field_name("left"))) == name and \
                text(n.child_by_field_name("operator")) == "+=" and text(n.child_by_field_name("right")) in ("1", "1.0f"):
            out.append(n)
    return out


def _tap_bound(loop: Node) -> str | None:
    """`B` of `for (int k = 0; k < B; ...)` (a loop over the window from its start)."""
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    if init is None or cond is None or not re.search(r"=\s*0\s*;?$", text(init).strip()):
        return None
    cond = unparen(cond)
    if cond.type != "binary_expression" or text(cond.child_by_field_name("operator")) != "<":
        return None
    return text(cond.child_by_field_name("right"))


def valid_count_averages(fn: Function) -> list[ValidCountAverage]:
    out = []
    for name, values in fn.defs.items():
        if not values or text(unparen(values[0])) not in ("0", "0.0f", "0.f", "0.0"):
            continue
        incs = _increments(fn, name)
        if len(incs) != 1:
            continue
        inc = incs[0]
        loops = [lp for lp in enclosing_loops(inc, fn) if lp.type == "for_statement"]
        # the taps outside the input are skipped: the increment sits under an `if`, or after a `continue`
        guarded = bool(loops) and (
            any(a.type == "if_statement" for a in ancestors(inc) if a.start_byte > loops[0].start_byte)
            or any(n.type == "continue_statement" and n.end_byte < inc.start_byte for n in walk(loops[0])))
        bounds = [_tap_bound(lp) for lp in loops]
        if not loops or not guarded or any(b is None for b in bounds):
            continue
        for d in fn.nodes("binary_expression"):
            if text(d.child_by_field_name("operator")) != "/":
                continue
            right = unparen(d.child_by_field_name("right"))
            inner = unparen(right.child_by_field_name("value")) if right.type == "cast_expression" else right
            if inner.type == "identifier" and text(inner) == name and d.start_byte > inc.end_byte:
                window = " * ".join(b if re.fullmatch(r"\w+", b) else f"({b})" for b in reversed(bounds))
                out.append(ValidCountAverage(d, right, name, window))
    return out


def pooling_facts(fn: Function) -> list[Fact]:
    return [Fact("cuda_avgpool_counts_valid",
                 f"{text(a.division)} in {fn.name} divides by {a.count}, the taps inside the input: PyTorch's "
                 f"AvgPool (count_include_pad=True) divides by the whole window, {a.window}",
                 fn.unit.pyline(a.division), "cuda", fn.name) for a in valid_count_averages(fn)][:1]


__all__ = ["ValidCountAverage", "pooling_facts", "valid_count_averages"]
