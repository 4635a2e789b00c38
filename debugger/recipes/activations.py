"""Elementwise-math recipes: activation formulas that are recognisably off, GELU variants, and
overflow-prone exp forms rewritten in stable forms.

`activation_constant` is conservative: it touches a float literal within 3% (but not within 1e-4) of a
known constant of activation formulas, a GELU erf argument scaled by sqrt(2) instead of 1/sqrt(2),
`2*sigmoid(u) - 1` standing for tanh(u) on GELU's inner term, a SiLU with the sign flipped, a leaky
ReLU whose slope sits on the positive branch (or is a literal while the module keeps a slope), a SELU
scale applied to one branch, and a smooth-L1 quadratic branch without its `/ beta`.
`gelu_variant` swaps one GELU for another (the reference decides which it wanted).
`stable_activation` rewrites exp-based tanh, sigmoid, softplus and log-sigmoid in overflow-free forms.
"""
from __future__ import annotations

import math
import re

from debugger.recipes.base import Recipe
from debugger.recipes.syntax import Kernel, Source
from debugger.source.edits import Edit
from debugger.source.tree import Node, call_arg, call_args, identifiers, line, number, text, unparen, walk

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


def paren_text(t: str) -> str:
    return t if re.fullmatch(r"[\w.]+", t) else f"({t})"


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
    description = ("Elementwise formulas recognisably off: GELU/SELU/log2e constants, erf scale, tanh = 2*sigmoid(2u)-1, "
                   "SiLU sign, leaky slope branch or literal, SELU scale on both branches, smooth-L1 / beta.")

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            fixes = self._constants(k) + self._erf_scale(s, k) + self._leaky_branches(s, k) + \
                self._silu_sign(s, k) + self._scale_both_branches(s, k) + self._smooth_l1_beta(s, k) + \
                self._tanh_via_sigmoid(s, k)
            yield self.patch(s, [e for f in fixes for e in f], f"correct activation constants in {k.name}")
            if len(fixes) > 1:
                for f in fixes:
                    yield self.patch(s, f, "correct one activation constant")
            yield from self._unused_slope(s, k)
            yield from self._hardcoded_slope(s, k)

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

    def _silu_sign(self, s: Source, k: Kernel) -> list[list[Edit]]:
        """SiLU is x * sigmoid(x) = x / (1 + exp(-x)): fix `x / (1 + exp(x))` and `x * sigmoid(-x)`."""
        edits = []
        for d in k.nodes("binary_operator"):
            op = text(d.child_by_field_name("operator"))
            x = text(unparen(d.child_by_field_name("left")))
            right = unparen(d.child_by_field_name("right"))
            if op == "/" and right.type == "binary_operator" and \
                    text(right.child_by_field_name("operator")) == "+":
                terms_ = [unparen(right.child_by_field_name("left")), unparen(right.child_by_field_name("right"))]
                one = [t for t in terms_ if number(t) == 1]
                ex = [t for t in terms_ if t.type == "call" and s.call_name(t) == "tl.exp"]
                if one and ex and text(unparen(call_arg(ex[0], 0, "x"))) == x:
                    edits.append([Edit.replace(call_arg(ex[0], 0, "x"), f"-{paren_text(x)}")])
            elif op == "*" and right.type == "call" and s.call_name(right) == "tl.sigmoid":
                arg = unparen(call_arg(right, 0, "x"))
                if arg.type == "unary_operator" and text(unparen(arg.named_children[0])) == x:
                    edits.append([Edit.replace(arg, x)])
        return edits

    def _scale_both_branches(self, s: Source, k: Kernel) -> list[list[Edit]]:
        """SELU: `where(x > 0, x, scale * alpha * (exp(x) - 1))` leaves the positive branch unscaled."""
        edits = []
        for c in k.calls("tl.where"):
            pos, _ = call_args(c)
            if len(pos) != 3 or _is_zero_cmp(pos[0]) is None:
                continue
            for a, b in ((pos[1], pos[2]), (pos[2], pos[1])):
                scale = _scale_factor(k, b)
                if scale is not None and scale not in _expanded(k, a):
                    edits.append([Edit.replace(a, f"{scale} * {paren_text(text(a))}")])
        return edits

    def _smooth_l1_beta(self, s: Source, k: Kernel) -> list[list[Edit]]:
        """Smooth L1: `where(|d| < beta, 0.5 * d * d / beta, |d| - 0.5 * beta)`; the quadratic branch
        without `/ beta` is the Huber loss."""
        edits = []
        for c in k.calls("tl.where"):
            pos, _ = call_args(c)
            cond = unparen(pos[0]) if len(pos) == 3 else None
            if cond is None or cond.type != "comparison_operator" or cond.named_child_count != 2:
                continue
            beta = text(unparen(cond.named_children[1]))
            q, r = pos[1], pos[2]
            if re.search(rf"0\.5\s*\*\s*{re.escape(beta)}\b", text(r)) and beta not in _expanded(k, q) \
                    and "0.5" in text(q) and "*" in text(q):
                edits.append([Edit.replace(q, f"{paren_text(text(q))} / {beta}")])
        return edits

    def _tanh_via_sigmoid(self, s: Source, k: Kernel) -> list[list[Edit]]:
        """tanh(u) = 2 sigmoid(2u) - 1: `2 * sigmoid(u) - 1` on the tanh-GELU inner
        u = sqrt(2/pi)(x + 0.044715 x^3) is missing the doubling."""
        edits = []
        for sg in k.calls("tl.sigmoid"):
            z = call_arg(sg, 0, "x")
            outer = sg.parent
            while outer is not None and outer.type == "parenthesized_expression":
                outer = outer.parent
            if outer is None or outer.type != "binary_operator" or text(outer.child_by_field_name("operator")) != "*":
                continue
            if not any(number(c) == 2 for c in (outer.child_by_field_name("left"), outer.child_by_field_name("right"))):
                continue
            chain = _expanded(k, z)
            if "0.044715" in chain and re.search(r"0\.7978", chain) and not re.search(r"1\.595|2\.0?\s*\*", text(z)):
                edits.append([Edit.replace(z, f"2.0 * {paren_text(text(z))}")])
        return edits

    def _hardcoded_slope(self, s: Source, k: Kernel):
        """A leaky ReLU with a literal slope while the module keeps its own slope attribute: pass it."""
        from debugger.recipes.base import add_kernel_param
        from debugger.source.tree import enclosing_class
        attrs = sorted({m.group(1) for m in re.finditer(r"self\.(\w+)\s*=", s.src) if SLOPE_NAME.search(m.group(1))})
        if len(attrs) != 1 or any(SLOPE_NAME.search(p.name) for p in k.params):
            return
        for c in k.calls("tl.where"):
            pos, _ = call_args(c)
            if len(pos) != 3 or _is_zero_cmp(pos[0]) is None:
                continue
            x = _is_zero_cmp(pos[0])[1]
            for branch in pos[1:]:
                if not _is_slope_product(branch, x):
                    continue
                lit = next((f for f in (unparen(branch).child_by_field_name("left"),
                                        unparen(branch).child_by_field_name("right"))
                            if number(f) is not None), None)
                if lit is None:
                    continue
                extra = add_kernel_param(s, k, "slope", lambda l: f"self.{attrs[0]}"
                                         if enclosing_class(l.call) == "ModelNew" else None)
                if extra:
                    yield self.patch(s, [Edit.replace(lit, "slope")] + extra,
                                     f"pass self.{attrs[0]} to {k.name} instead of the literal {text(lit)}")

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


def _expanded(k: Kernel, node: Node) -> str:
    """An expression's text followed by the definitions of the names it reads (one level)."""
    parts = [text(node)]
    for name in identifiers(node):
        parts += [text(rhs) for _, rhs in k.deps.defs.get(name, [])]
    return " ".join(parts)


def _scale_factor(k: Kernel, node: Node) -> str | None:
    """`scale` (or SELU's 1.0507... literal) multiplying a branch, directly or in its definition."""
    m = re.search(r"\b(scale|SCALE|selu_scale|lambda_?)\b\s*\*|\b(1\.0507\d*)\b", _expanded(k, node))
    return (m.group(1) or m.group(2)) if m else None


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


def _sigmoid_arg(s: Source, k: Kernel, node: Node, depth: int = 0) -> str | None:
    """z for tl.sigmoid(z), 1 / (1 + exp(-z)), or a name bound to either."""
    n = unparen(node)
    if n.type == "call" and s.call_name(n) == "tl.sigmoid":
        return text(call_arg(n, 0, "x"))
    div = _binop(n, "/")
    if div is not None and number(div[0]) == 1:
        den = _binop(div[1], "+")
        if den is not None and number(den[0]) == 1:
            a = exp_arg(s, k, den[1])
            if a is not None and a.startswith("-"):
                return a[1:].strip()
    if n.type == "identifier" and depth < 2:
        defs = k.deps.defs.get(text(n), [])
        if len(defs) == 1:
            return _sigmoid_arg(s, k, defs[0][1], depth + 1)
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
    description = "exp-based tanh / sigmoid / softplus / log-sigmoid that overflow for large inputs -> stable forms."

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            edits = []
            for d in k.nodes("binary_operator"):
                if text(d.child_by_field_name("operator")) == "/":
                    e = self._tanh(s, k, d) or self._sigmoid(s, k, d)
                    if e is not None:
                        edits.append(e)
            for c in k.calls("tl.log"):
                e = self._softplus(s, k, c) or self._log_sigmoid(s, k, c)
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

    def _log_sigmoid(self, s: Source, k: Kernel, c: Node) -> Edit | None:
        """log(sigmoid(z)) and log(1 - sigmoid(z)) (a BCE on probabilities) underflow to log(0):
        log sigmoid(z) = -(max(-z, 0) + log(1 + exp(-|z|))), log(1 - sigmoid(z)) = log sigmoid(-z)."""
        arg = unparen(call_arg(c, 0, "x"))
        sign = "-"
        diff = _binop(arg, "-")
        if diff is not None and number(diff[0]) == 1:
            arg, sign = unparen(diff[1]), ""
        z = _sigmoid_arg(s, k, arg)
        if z is None:
            return None
        tl = s.tl
        neg = f"{sign}{paren_text(z)}" if sign else z
        return Edit.replace(c, f"(-({tl}.maximum({neg}, 0.0) + {tl}.log(1.0 + {tl}.exp(-{tl}.abs({z})))))")

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


# -------------------------------------------------------------------------------------------------
SQRT_2_OVER_PI_X2 = 1.5957691216057308
INV_SQRT2 = 0.7071067811865476


def tanh_gelu_factor(tl: str, x: str) -> str:
    """tanh(sqrt(2/pi) (x + 0.044715 x^3)) written with tl.sigmoid (no libdevice needed)."""
    return f"(2.0 * {tl}.sigmoid({SQRT_2_OVER_PI_X2} * ({x} + 0.044715 * {x} * {x} * {x})) - 1.0)"


def erf_gelu(tl: str, x: str) -> str:
    return f"0.5 * {x} * (1.0 + {tl}.erf({x} * {INV_SQRT2}))"


def _erf_input(node: Node) -> str | None:
    """X for `X * 0.7071...` or `X / 1.4142...` (the exact GELU's erf argument)."""
    a = unparen(node)
    if a.type != "binary_operator":
        return None
    op, left, right = text(a.child_by_field_name("operator")), a.child_by_field_name("left"), \
        a.child_by_field_name("right")
    for val, other in ((number(right), left), (number(left), right)):
        if val is None:
            continue
        if op == "*" and abs(val - INV_SQRT2) < 1e-3 or op == "/" and other is left and abs(val - 2 ** 0.5) < 1e-3:
            return paren_text(text(other))
    return None


class GeluVariant(Recipe):
    id = "gelu_variant"
    bug_classes = ("activation_formula",)
    symptoms = ("precision_noise", "sparse_wrong", "large_error")
    description = "The other GELU: exact (erf) <-> tanh approximation <-> sigmoid(1.702 x) quick GELU."

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            for c in k.calls("tl.erf"):
                x = _erf_input(call_arg(c, 0, "x"))
                if x is not None:
                    yield self.patch(s, [Edit.replace(c, tanh_gelu_factor(s.tl, x))],
                                     f"tanh-approximate GELU instead of erf at line {line(c)}")
            yield from self._sigmoid_forms(s, k)
            yield from self._tanh_forms(s, k)

    def _sigmoid_forms(self, s: Source, k: Kernel):
        """`x * sigmoid(1.702 x)` (quick GELU) or `x * sigmoid(1.5957 (x + 0.044715 x^3))`."""
        for m in k.nodes("binary_operator"):
            if text(m.child_by_field_name("operator")) != "*":
                continue
            left, right = unparen(m.child_by_field_name("left")), unparen(m.child_by_field_name("right"))
            for x, sg in ((left, right), (right, left)):
                if sg.type != "call" or s.call_name(sg) != "tl.sigmoid":
                    continue
                arg = text(call_arg(sg, 0, "x"))
                xt = text(x)
                c, xe = r"1\.70?2?\d*", re.escape(xt)
                quick = re.fullmatch(rf"\(?\s*({c}\s*\*\s*{xe}|{xe}\s*\*\s*{c})\s*\)?", arg)
                tanh_form = "0.044715" in arg and re.match(r"\(?\s*1\.59", arg)
                if quick:
                    yield self.patch(s, [Edit.replace(m, erf_gelu(s.tl, paren_text(xt)))],
                                     f"exact GELU instead of sigmoid(1.702 x) at line {line(m)}")
                    yield self.patch(s, [Edit.replace(m, f"0.5 * {paren_text(xt)} * (1.0 + "
                                                         f"{tanh_gelu_factor(s.tl, paren_text(xt))})")],
                                     f"tanh GELU instead of sigmoid(1.702 x) at line {line(m)}")
                elif tanh_form:
                    yield self.patch(s, [Edit.replace(m, erf_gelu(s.tl, paren_text(xt)))],
                                     f"exact GELU instead of the tanh approximation at line {line(m)}")

    def _tanh_forms(self, s: Source, k: Kernel):
        """`0.5 * x * (1 + T)` with T a tanh of sqrt(2/pi)(x + 0.044715 x^3): T -> erf(x / sqrt(2))."""
        for add in k.nodes("binary_operator"):
            if text(add.child_by_field_name("operator")) != "+":
                continue
            left, right = unparen(add.child_by_field_name("left")), unparen(add.child_by_field_name("right"))
            t = right if number(left) == 1 else left if number(right) == 1 else None
            if t is None or "0.044715" not in self._chain(k, t) or s.calls(t, "tl.erf"):
                continue
            x = self._gelu_input(k, add)
            if x is not None:
                yield self.patch(s, [Edit.replace(t, f"{s.tl}.erf({paren_text(x)} * {INV_SQRT2})")],
                                 f"exact GELU instead of the tanh approximation at line {line(add)}")

    @staticmethod
    def _chain(k: Kernel, node: Node) -> str:
        """Text of an expression and of every definition it depends on."""
        names = k.deps.closure(identifiers(node))
        return " ".join([text(node)] + [text(rhs) for n in names for _, rhs in k.deps.defs.get(n, [])])

    @staticmethod
    def _gelu_input(k: Kernel, add: Node) -> str | None:
        """x in `0.5 * x * (1 + T)` / `x * 0.5 * (1 + T)` / `x * (1 + T) * 0.5`."""
        n = add
        while n.parent is not None and n.parent.type in ("parenthesized_expression", "binary_operator"):
            n = n.parent
            if n.type == "binary_operator" and text(n.child_by_field_name("operator")) == "*":
                factors = [unparen(f) for f in _mul_terms(n)]
                rest = [f for f in factors if number(f) != 0.5 and not (f.start_byte <= add.start_byte
                                                                         and add.end_byte <= f.end_byte)]
                if any(number(f) == 0.5 for f in factors) and len(rest) == 1:
                    return text(rest[0])
        return None


def _mul_terms(node: Node) -> list[Node]:
    node = unparen(node)
    if node.type == "binary_operator" and text(node.child_by_field_name("operator")) == "*":
        return _mul_terms(node.child_by_field_name("left")) + _mul_terms(node.child_by_field_name("right"))
    return [node]
