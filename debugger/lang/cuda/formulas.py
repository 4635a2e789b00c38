"""Activation formulas a CUDA kernel writes by hand: the tanh approximation of GELU.

`0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))` departs from exact GELU (PyTorch's default,
`0.5 * x * (1 + erf(x / sqrt(2)))`) by up to about 3e-4 near |x| = 2 and more in float32 at large |x|:
inside KernelBench's 1e-2, outside kdebug's kernel tolerance. The fact `cuda_tanh_gelu` is descriptive (a
reference may use `approximate="tanh"`, where it is right); the recipe cuda_exact_gelu replaces the tanh
call with `erf(x * 1/sqrt(2))` and the evaluation decides.

The approximation is found by its coefficient, 0.044715 (a literal, a local or namespace constant, or a
#define): a `tanh` call whose argument, followed through the function's definitions, holds `x + c * ...`
with `c` that coefficient names x, the GELU input.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from debugger.lang import Fact
from debugger.lang.cuda.unit import Function, call_args
from debugger.source.tree import text, unparen, walk

COEFF = re.compile(r"^0?\.044715(?:0*)[fF]?$")
ERF_OF = {"tanhf": "erff", "tanh": "erf", "__tanhf": "erff"}
_MAX_DEPTH = 3


@dataclass(frozen=True)
class TanhGelu:
    call: Node   # the tanh call
    x: Node      # the GELU input, as the approximation's argument names it
    erf: str     # erff or erf

    @property
    def replacement(self) -> str:
        x = text(self.x) if self.x.type in ("identifier", "field_expression", "subscript_expression") \
            else f"({text(self.x)})"
        return f"{self.erf}({x} * 0.70710678118654752f)" if self.erf == "erff" else \
            f"{self.erf}({x} * 0.70710678118654752)"


def _values(fn: Function, name: str) -> list[Node]:
    """What `name` is defined as: in the function, else anywhere in the unit (namespace constants)."""
    return fn.defs.get(name, []) or fn.unit.initialisers.get(name, [])


def _constant(fn: Function, node: Node, depth: int = 0) -> bool:
    """`node` folds to a constant: literals, and names whose every definition does."""
    for n in walk(node):
        if n.type == "identifier":
            name = text(n)
            if name in fn.unit.macros:
                continue
            values = _values(fn, name)
            if depth >= _MAX_DEPTH or not values or not all(_constant(fn, v, depth + 1) for v in values):
                return False
    return True


def is_coefficient(fn: Function, node: Node, depth: int = 0) -> bool:
    """`node` holds 0.044715: as a literal, or through a constant (local, namespace or #define) it reads;
    a variable is not followed (`sum = sum * cdf` after the approximation does not make `sum` one)."""
    for n in walk(node):
        if n.type == "number_literal" and COEFF.match(text(n)):
            return True
        if n.type == "identifier" and depth < _MAX_DEPTH:
            name = text(n)
            if COEFF.match(fn.unit.macros.get(name, "").strip("() ")):
                return True
            values = _values(fn, name)
            if values and all(_constant(fn, v) for v in values) and \
                    any(is_coefficient(fn, v, depth + 1) for v in values):
                return True
    return False


def _gelu_input(fn: Function, root: Node, depth: int = 0) -> Node | None:
    """x of `x + c * ...` (c the coefficient) inside `root`, followed through local definitions."""
    for b in walk(root):
        if b.type != "binary_expression" or text(b.child_by_field_name("operator")) != "+":
            continue
        left, right = unparen(b.child_by_field_name("left")), unparen(b.child_by_field_name("right"))
        for x, other in ((left, right), (right, left)):
            if x.type != "number_literal" and not is_coefficient(fn, x) and is_coefficient(fn, other):
                return x
    if depth < _MAX_DEPTH:
        for n in walk(root):
            if n.type == "identifier":
                for value in fn.defs.get(text(n), []):
                    found = _gelu_input(fn, value, depth + 1)
                    if found is not None:
                        return found
    return None


def tanh_gelus(fn: Function) -> list[TanhGelu]:
    out = []
    for call in fn.calls(*ERF_OF):
        args = call_args(call)
        if len(args) != 1:
            continue
        x = _gelu_input(fn, args[0])
        if x is not None:
            out.append(TanhGelu(call, x, ERF_OF[text(call.child_by_field_name("function")).split("::")[-1]]))
    return out


def tanh_gelu_facts(fn: Function) -> list[Fact]:
    found = tanh_gelus(fn)
    if not found:
        return []
    g = found[0]
    return [Fact("cuda_tanh_gelu", f"{fn.name} computes GELU by its tanh approximation ({text(g.call)}): exact "
                 f"GELU, PyTorch's default, is 0.5 * x * (1 + erf(x / sqrt(2))); they differ by up to ~3e-4",
                 fn.unit.pyline(g.call), "cuda", fn.name)]
