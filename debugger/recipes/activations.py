"""Elementwise-math recipes: activation constants that are recognisably off, and overflow-prone
exp forms of tanh, sigmoid and softplus rewritten in their stable forms.

`activation_constant` is conservative: it touches only a float literal within 3% (but not within
1e-4) of a known constant of activation formulas, a GELU erf argument scaled by sqrt(2) instead of
1/sqrt(2), a leaky ReLU whose slope sits on the positive branch, or a slope parameter the kernel
ignores in favour of a literal.
"""
from __future__ import annotations

import math
import re

from debugger.recipes.base import Edit, Recipe
from debugger.recipes.syntax import Kernel, Node, Source, call_arg, call_args, identifiers, line, number, \
    text, unparen, walk

KNOWN = {
    "sqrt(2/pi)": math.sqrt(2 / math.pi),
    "GELU cubic coefficient": 0.044715,
    "1/sqrt(2)": 1 / math.sqrt(2),
    "sqrt(2)": math.sqrt(2),
    "2*sqrt(2/pi)": 2 * math.sqrt(2 / math.pi),
    "log2(e)": math.log2(math.e),
    "ln(2)": math.log(2),
    "SELU alpha": 1.6732632423543772,
    "SELU scale": 1.0507009873554805,
    "quick-GELU 1.702": 1.702,
    "pi": math.pi,
}
SLOPE_NAME = re.compile(r"slope|alpha|leak", re.I)


def significant_digits(t: str) -> int:
    mant = re.split(r"[eE]", t)[0].replace(".", "").replace("-", "").lstrip("0")
    return len(mant.rstrip("0")) if "." in t else len(mant)


def near_miss(t: str, v: float) -> tuple[str, float] | None:
    """(name, true value) of the known constant `v` misses by 1e-4..3% relative."""
    if significant_digits(t) < 3 or v == 0:
        return None
    if any(abs(abs(v) - c) / c <= 1e-4 for c in KNOWN.values()):
        return None
    for name, c in KNOWN.items():
        rel = abs(abs(v) - c) / c
        if 1e-4 < rel < 0.03:
            return name, math.copysign(c, v)
    return None


def _is_zero_cmp(node: Node) -> tuple[str, str] | None:
    """(operator, compared text) for `x > 0`, `x >= 0.0`, `x < 0`, `0 < x`..."""
    n = unparen(node)
    if n.type != "comparison_operator" or n.named_child_count != 2:
        return None
    a, b = n.named_children
    op = next((c.type for c in n.children if c.type in ("<", ">", "<=", ">=")), None)
    if op is None:
        return None
    if number(b) == 0:
        return op, text(a)
    if number(a) == 0:
        return {"<": ">", ">": "<", "<=": ">=", ">=": "<="}[op], text(b)
    return None


def _is_slope_product(node: Node, x: str) -> bool:
    n = unparen(node)
    if n.type != "binary_operator" or text(n.child_by_field_name("operator")) != "*":
        return False
    sides = [unparen(n.child_by_field_name("left")), unparen(n.child_by_field_name("right"))]
    if not any(text(s) == x for s in sides):
        return False
    other = next(s for s in sides if text(s) != x) if any(text(s) != x for s in sides) else None
    v = number(other) if other is not None else None
    return other is not None and (bool(SLOPE_NAME.search(text(other))) or (v is not None and 0 < v < 1))


class ActivationConstant(Recipe):
    id = "activation_constant"
    bug_classes = ("activation_formula",)
    symptoms = ("precision_noise", "large_error", "sparse_wrong", "fails_negative_inputs", "sign_flip",
                "all_wrong")
    description = "Activation constants (GELU tanh/erf, leaky slope, SELU) that are recognisably off."

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            fixes = self._constants(k) + self._erf_scale(s, k) + self._leaky_branches(s, k)
            yield self.patch(s, [e for f in fixes for e in f], f"correct activation constants in {k.name}")
            if len(fixes) > 1:
                for f in fixes:
                    yield self.patch(s, f, "correct one activation constant")
            yield from self._unused_slope(s, k)

    def _constants(self, k: Kernel) -> list[list[Edit]]:
        edits = []
        for n in walk(k.body):
            if n.type != "float":
                continue
            hit = near_miss(text(n), float(text(n)))
            if hit:
                edits.append([Edit.replace(n, repr(abs(hit[1])))])
        return edits

    def _erf_scale(self, s: Source, k: Kernel) -> list[list[Edit]]:
        """GELU's erf takes x / sqrt(2) = x * 0.7071...; swap a multiplication by sqrt(2) (or a
        division by 1/sqrt(2))."""
        edits = []
        for c in k.calls("tl.erf"):
            arg = unparen(call_arg(c, 0, "x"))
            if arg.type != "binary_operator":
                continue
            op = text(arg.child_by_field_name("operator"))
            right = arg.child_by_field_name("right")
            v = number(right)
            if v is None:
                continue
            if op == "*" and abs(v - math.sqrt(2)) < 1e-3:
                edits.append([Edit.replace(right, repr(1 / math.sqrt(2)))])
            elif op == "/" and abs(v - 1 / math.sqrt(2)) < 1e-3:
                edits.append([Edit.replace(right, repr(math.sqrt(2)))])
        return edits

    def _leaky_branches(self, s: Source, k: Kernel) -> list[list[Edit]]:
        """`tl.where(x > 0, x * slope, x)` has the slope on the wrong branch: swap the branches."""
        edits = []
        for c in k.calls("tl.where"):
            pos, _ = call_args(c)
            if len(pos) != 3:
                continue
            cmp = _is_zero_cmp(pos[0])
            if cmp is None:
                continue
            op, x = cmp
            a, b = pos[1], pos[2]
            positive_first = op in (">", ">=")
            slope_on_a = _is_slope_product(a, x) and text(unparen(b)) == x
            slope_on_b = _is_slope_product(b, x) and text(unparen(a)) == x
            if (positive_first and slope_on_a) or (not positive_first and slope_on_b):
                edits.append([Edit.replace(a, text(b)), Edit.replace(b, text(a))])
        return edits

    def _unused_slope(self, s: Source, k: Kernel):
        used = identifiers(k.body)
        slopes = [p.name for p in k.params if SLOPE_NAME.search(p.name) and p.name not in used]
        if len(slopes) != 1:
            return
        lits = [n for n in walk(k.body) if n.type == "float" and 0 < float(text(n)) < 1
                and float(text(n)) != 0.5 and not near_miss(text(n), float(text(n)))]
        for n in lits[:3]:
            yield self.patch(s, [Edit.replace(n, slopes[0])],
                             f"use the {slopes[0]} parameter instead of {text(n)} at line {line(n)}")


# -------------------------------------------------------------------------------------------------
def exp_arg(s: Source, k: Kernel, node: Node, depth: int = 0) -> str | None:
    """The exponent `a` of an operand equal to exp(a): an exp call, a name bound to one, or 1 (a=0)."""
    n = unparen(node)
    if number(n) == 1:
        return "0"
    if n.type == "call" and s.call_name(n) == "tl.exp":
        return text(call_arg(n, 0, "x"))
    if n.type == "identifier" and depth < 2:
        defs = k.deps.defs.get(text(n), [])
        if len(defs) == 1:
            return exp_arg(s, k, defs[0][1], depth + 1)
    return None


def _binop(node: Node, op: str) -> tuple[Node, Node] | None:
    n = unparen(node)
    if n.type == "binary_operator" and text(n.child_by_field_name("operator")) == op:
        return n.child_by_field_name("left"), n.child_by_field_name("right")
    return None


def _diff(p: str, q: str) -> str:
    if q == "0":
        return p
    return f"({p}) - ({q})"


class StableActivation(Recipe):
    id = "stable_activation"
    bug_classes = ("numerical_overflow",)
    symptoms = ("fails_large_magnitude", "nan_in_output", "inf_in_output")
    description = "exp-based tanh / sigmoid / softplus that overflow for large inputs -> stable forms."

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            edits = []
            for d in k.nodes("binary_operator"):
                if text(d.child_by_field_name("operator")) == "/":
                    e = self._tanh(s, k, d) or self._sigmoid(s, k, d)
                    if e is not None:
                        edits.append(e)
            for c in k.calls("tl.log"):
                e = self._softplus(s, k, c)
                if e is not None:
                    edits.append(e)
            yield self.patch(s, _outermost(edits), f"stable exp forms in {k.name}")

    def _tanh(self, s: Source, k: Kernel, d: Node) -> Edit | None:
        """(e^p - e^q) / (e^p + e^q) = tanh((p-q)/2) = 2 sigmoid(p - q) - 1."""
        num = _binop(d.child_by_field_name("left"), "-")
        den = _binop(d.child_by_field_name("right"), "+")
        if num is None or den is None:
            return None
        p, q = (exp_arg(s, k, x) for x in num)
        dp, dq = (exp_arg(s, k, x) for x in den)
        if None in (p, q) or {text(unparen(num[0])), text(unparen(num[1]))} != \
                {text(unparen(den[0])), text(unparen(den[1]))}:
            return None
        if dp is None or dq is None or p == q:
            return None
        return Edit.replace(d, f"(2.0 * {s.tl}.sigmoid({_diff(p, q)}) - 1.0)")

    def _sigmoid(self, s: Source, k: Kernel, d: Node) -> Edit | None:
        """e^p / (1 + e^p) = sigmoid(p)."""
        p = exp_arg(s, k, d.child_by_field_name("left"))
        den = _binop(d.child_by_field_name("right"), "+")
        if p is None or p == "0" or den is None:
            return None
        args = [exp_arg(s, k, x) for x in den]
        if sorted(a for a in args if a is not None) != sorted(["0", p]):
            return None
        return Edit.replace(d, f"{s.tl}.sigmoid({p})")

    def _softplus(self, s: Source, k: Kernel, c: Node) -> Edit | None:
        """log(1 + e^z) -> z above 20 (torch's threshold), the log form below."""
        inner = _binop(call_arg(c, 0, "x"), "+")
        if inner is None:
            return None
        args = [exp_arg(s, k, x) for x in inner]
        if None in args or "0" not in args or args == ["0", "0"]:
            return None
        z = next(a for a in args if a != "0")
        return Edit.replace(c, f"{s.tl}.where(({z}) > 20.0, {z}, {s.tl}.log(1.0 + {s.tl}.exp("
                               f"{s.tl}.minimum({z}, 20.0))))")


def _outermost(edits: list[Edit]) -> list[Edit]:
    """Drop edits nested inside another edit's range."""
    return [e for e in edits if not any(o is not e and o.start <= e.start and e.end <= o.end
                                        and (o.start, o.end) != (e.start, e.end) for o in edits)]
