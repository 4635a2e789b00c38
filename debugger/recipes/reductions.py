"""Reduction and normalisation recipes: max subtraction before exp (a two-pass max when the sum of
exps runs over a loop), means over N, the variance's divisor, eps inside the square root."""
from __future__ import annotations

import re

from debugger.recipes.base import Patch, Recipe
from debugger.recipes.indexing import comparisons, loop_of, mask_arg, other_arg, size_params
from debugger.recipes.syntax import Kernel, Source
from debugger.source.edits import Edit
from debugger.source.tree import Node, call_arg, identifiers, line, number, statement_of, text, unparen, walk

SIMPLE = ("identifier", "attribute", "subscript", "call", "parenthesized_expression")
EPS_NAME = re.compile(r"^(eps|epsilon|EPS|EPSILON|eps_\w*|\w*_eps)$")


def paren(node: Node) -> str:
    """Node text, parenthesised unless it is atomic."""
    return text(node) if unparen(node).type in SIMPLE or node.type == "parenthesized_expression" \
        else f"({text(node)})"


def fresh_name(k: Kernel, base: str) -> str:
    used = set(k.deps.direct) | set(k.param_names) | identifiers(k.body)
    name, i = base, 1
    while name in used:
        i += 1
        name = f"{base}{i}"
    return name


def insert_before(s: Source, stmt: Node, code: str) -> Edit:
    """Insert a line of code before a statement, at its indentation."""
    return Edit.insert(s.line_start(stmt), f"{s.indent_of(stmt)}{code}\n")


def sum_derived_names(k: Kernel) -> set[str]:
    """Names whose value depends on a tl.sum (a total that a mean divides)."""
    direct = {n for n, defs in k.deps.defs.items() for _, rhs in defs if k.src.calls(rhs, "tl.sum")}
    return {n for n in k.deps.direct if k.deps.closure({n}) & direct}


# -------------------------------------------------------------------------------------------------
def _already_shifted(k: Kernel, arg: Node) -> bool:
    """The exponent already involves a max (a tl.max/tl.maximum call or a name saying max), directly
    or through the variables it is computed from."""
    names = k.deps.closure(identifiers(arg))
    if "max" in text(arg).lower() or any("max" in n.lower() for n in names):
        return True
    return any(k.src.calls(rhs, "tl.max", "tl.maximum")
               for n in names for _, rhs in k.deps.defs.get(n, []))


def _stored_max(s: Source, k: Kernel) -> str | None:
    """A name loaded from memory that holds a max (`row_max = tl.load(max_ptr + row)`)."""
    for name, defs in k.deps.defs.items():
        for _, rhs in defs:
            rhs = unparen(rhs) if rhs is not None else None
            if rhs is None or rhs.type != "call" or s.call_name(rhs) != "tl.load":
                continue
            ptr = call_arg(rhs, 0, "pointer")
            if "max" in name.lower() or (ptr is not None and "max" in text(ptr).lower()):
                return name
    return None


def _exp_sum(k: Kernel, exp: Node) -> Node | None:
    """The tl.sum that adds up this exp (directly or through the variable it is assigned to)."""
    names = downstream(k, assigned_names(statement_of(exp)))
    for c in k.calls("tl.sum"):
        arg = call_arg(c, 0, "input")
        if arg is None:
            continue
        if exp.start_byte >= c.start_byte and exp.end_byte <= c.end_byte:
            return c
        if identifiers(arg) & names and c.start_byte > exp.start_byte:
            return c
    return None


class SubtractRowmax(Recipe):
    id = "subtract_rowmax"
    bug_classes = ("numerical_overflow",)
    symptoms = ("no_max_subtraction", "fails_large_magnitude", "nan_in_output", "inf_in_output")
    description = "Softmax / log-sum-exp without the max: exp(x) -> exp(x - max(x)) (and add it back to a log)."

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            by_arg: dict[str, list[Node]] = {}
            stored = _stored_max(s, k)
            for e in k.calls("tl.exp", "tl.exp2"):
                arg = call_arg(e, 0, "x")
                if arg is None or _already_shifted(k, arg):
                    continue
                if stored is not None and s.call_name(e) == "tl.exp":
                    # A later pass of a multi-kernel softmax: the max was computed and stored before.
                    yield self.patch(s, [Edit.replace(arg, f"{paren(arg)} - {stored}")],
                                     f"subtract the stored row max {stored} before exp in {k.name}")
                if loop_of(k, e) is not None:
                    if s.call_name(e) == "tl.exp":
                        yield max_prepass(self, s, k, e, loop_of(k, e))
                    continue
                by_arg.setdefault(f"{s.call_name(e)}|{text(arg).replace(' ', '')}", []).append(e)
            for key, exps in by_arg.items():
                yield from self._shift(s, k, key.split("|")[0], exps)

    def _shift(self, s: Source, k: Kernel, fn: str, exps: list[Node]):
        first = min(exps, key=lambda n: n.start_byte)
        total = next((t for t in (_exp_sum(k, e) for e in exps) if t is not None), None)
        if total is None:
            return
        axis = call_arg(total, 1, "axis")
        axis_t = text(axis) if axis is not None else "0"
        keep = call_arg(total, 2, "keep_dims")
        arg = call_arg(first, 0, "x")
        m = fresh_name(k, "row_max")
        stmt = statement_of(first)
        base = [insert_before(s, stmt, f"{m} = {s.tl}.max({text(arg)}, axis={axis_t}, keep_dims=True)")]
        base += [Edit.replace(call_arg(e, 0, "x"), f"{paren(call_arg(e, 0, 'x'))} - {m}") for e in exps]
        yield self.patch(s, base, f"subtract the row max before {fn} in {k.name}")
        # log-sum-exp: log(sum(exp(x - m))) + m restores the unshifted value.
        log_fn = {"tl.exp": "tl.log", "tl.exp2": "tl.log2"}[fn]
        logs = [c for c in k.calls(log_fn) if _uses(k, c, total)]
        if not logs:
            return
        mr = m if keep is not None and text(keep) == "True" else fresh_name(k, "row_max_r")
        extra = [] if mr == m else [insert_before(s, stmt, f"{mr} = {s.tl}.max({text(arg)}, axis={axis_t})")]
        adds = [e for c in logs for e in (Edit.insert(c.start_byte, "("), Edit.insert(c.end_byte, f" + {mr})"))]
        yield self.patch(s, base + extra + adds, f"subtract the row max before {fn} and add it back "
                                                 f"after {log_fn} in {k.name}")


def assigned_names(stmt: Node) -> set[str]:
    """Names a simple assignment statement binds."""
    n = stmt.named_children[0] if stmt.type == "expression_statement" and stmt.named_child_count else stmt
    if n.type in ("assignment", "augmented_assignment"):
        left = n.child_by_field_name("left")
        return {text(left)} if left is not None and left.type == "identifier" else set()
    return set()


def downstream(k: Kernel, names: set[str]) -> set[str]:
    """`names` and every name computed from them."""
    return names | {n for n in k.deps.direct if k.deps.closure({n}) & names}


def loop_slice(k: Kernel, loop, node: Node) -> list[Node] | None:
    """The loop-body statements `node` depends on, in order (None if one is not a plain statement
    of the body itself)."""
    body = [c for c in loop.body.named_children if c.type != "comment"]
    assigned = {n: st for st in body for n in assigned_names(st)}
    need, todo = set(), set(identifiers(node))
    while todo:
        name = todo.pop()
        if name in need or name not in assigned:
            continue
        need.add(name)
        todo |= identifiers(assigned[name])
    if any(name in k.deps.defs and any(loop.body.start_byte <= st.start_byte < loop.body.end_byte
                                       and statement_of(st) not in body for st, _ in k.deps.defs[name])
           for name in need):
        return None
    return [st for st in body if assigned_names(st) & need]


def with_fill(s: Source, stmt: Node, fill: str) -> str:
    """The statement's source lines, its masked loads filling `fill`."""
    start, end = s.line_start(stmt), s.data.find(b"\n", stmt.end_byte)
    edits = []
    for c in s.calls(stmt, "tl.load"):
        if mask_arg(s, c) is None:
            continue
        o = other_arg(c)
        edits.append((o.start_byte, o.end_byte, fill) if o is not None else
                     (last_arg_end(c), last_arg_end(c), f", other={fill}"))
    out = s.data[start:end]
    for a, b, t in sorted(edits, reverse=True):
        out = out[:a - start] + t.encode() + out[b - start:]
    return out.decode()


def _uses(k: Kernel, call: Node, total: Node) -> bool:
    """`call` reads the sum `total` (inline or through a variable)."""
    if call.start_byte <= total.start_byte and total.end_byte <= call.end_byte:
        return True
    return bool(identifiers(call) & downstream(k, assigned_names(statement_of(total))))


def max_prepass(recipe: Recipe, s: Source, k: Kernel, e: Node, loop) -> Patch | None:
    """A log-sum-exp accumulated over a loop: a first pass over the same loop finds the max,
    the second subtracts it inside exp, and the final log adds it back."""
    acc_stmt = statement_of(e)
    accs = assigned_names(acc_stmt)
    if len(accs) != 1 or acc_stmt.named_children[0].type != "augmented_assignment":
        return None
    acc = accs.pop()
    arg = call_arg(e, 0, "x")
    stmts = loop_slice(k, loop, arg)
    if stmts is None:
        return None
    m = fresh_name(k, "row_max")
    header = text(loop.node)[:loop.body.start_byte - loop.node.start_byte].rstrip()
    indent, inner = s.indent_of(loop.node), s.indent_of(loop.body.named_children[0])
    body = [with_fill(s, st, '-float("inf")')[len(indent):] for st in stmts]
    # The block size of the exponent's lanes: the tl.arange its values are indexed by.
    names = k.deps.closure(identifiers(arg))
    sizes = {text(call_arg(c, 1, "end")) for n in names for _, rhs in k.deps.defs.get(n, []) if rhs is not None
             for c in s.calls(rhs, "tl.arange")} | {text(call_arg(c, 1, "end")) for c in s.calls(arg, "tl.arange")}
    if len(sizes) == 1 and "" not in sizes:
        # Keep a vector of running maxima and reduce it once after the loop (as a hand-written
        # two-pass kernel does): a cross-lane max per block costs time on a GPU.
        vec = fresh_name(k, "max_vec")
        lines = [f"{vec} = {s.tl}.full([{sizes.pop()}], -float(\"inf\"), {s.tl}.float32)", header, *body,
                 f"{inner[len(indent):]}{vec} = {s.tl}.maximum({vec}, {text(arg)})",
                 f"{m} = {s.tl}.max({vec}, axis=0)"]
    else:
        lines = [f"{m} = {s.tl}.full([], -float(\"inf\"), {s.tl}.float32)", header, *body,
                 f"{inner[len(indent):]}{m} = {s.tl}.maximum({m}, {s.tl}.max({text(arg)}, axis=0))"]
    edits = [Edit.insert(s.line_start(loop.node), "".join(f"{indent}{l}\n" for l in lines)),
             Edit.replace(arg, f"{paren(arg)} - {m}")]
    for c in k.calls("tl.log"):
        if c.start_byte > loop.node.end_byte and acc in k.deps.closure(identifiers(c)):
            edits += [Edit.insert(c.start_byte, "("), Edit.insert(c.end_byte, f" + {m})")]
    return recipe.patch(s, edits, f"two-pass log-sum-exp: find the max before the loop at line {line(loop.node)}")


# -------------------------------------------------------------------------------------------------
def block_bounds(k: Kernel, block: str) -> list[str]:
    """Bounds compared with offsets built from tl.arange(0, block), then the size parameters."""
    out = []
    aranged = {n for n, defs in k.deps.defs.items() for _, rhs in defs
               if any(block in text(c) for c in k.src.calls(rhs, "tl.arange"))}
    for c in comparisons(k):
        if c.op == "<" and identifiers(c.index) & aranged and not k.is_constexpr(text(c.bound)):
            out.append(text(c.bound))
    out += size_params(k)
    return list(dict.fromkeys(out))


class MeanOverN(Recipe):
    id = "mean_over_n"
    bug_classes = ("normalization_formula",)
    symptoms = ("divides_by_block", "constant_factor", "intermediate_wrong", "whole_rows_wrong")
    description = "A mean divides by the BLOCK size: divide by the true element count N."

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            summed = sum_derived_names(k)
            for d in k.nodes("binary_operator"):
                if text(d.child_by_field_name("operator")) != "/":
                    continue
                right = unparen(d.child_by_field_name("right"))
                block = text(right)
                if right.type != "identifier" or not k.is_constexpr(block):
                    continue
                stmt = statement_of(d)
                if not (s.calls(stmt, "tl.sum") or identifiers(stmt) & summed):
                    continue
                for b in block_bounds(k, block)[:3]:
                    yield self.patch(s, [Edit.replace(right, b)],
                                     f"divide by {b} instead of {block} at line {line(d)}")


# -------------------------------------------------------------------------------------------------
def _is_variance(k: Kernel, stmt: Node) -> bool:
    left = stmt.child_by_field_name("left") if stmt.type == "assignment" else None
    if left is None or left.type != "identifier":
        return False
    name = text(left).lower()
    if re.search(r"(^|_)var(iance)?($|_)", name):
        return True
    rhs = stmt.child_by_field_name("right")
    for c in k.src.calls(rhs, "tl.sum"):
        arg = unparen(call_arg(c, 0, "input"))
        if arg.type == "binary_operator" and text(arg.child_by_field_name("operator")) in ("*", "**"):
            l, r = arg.child_by_field_name("left"), arg.child_by_field_name("right")
            if (text(l) == text(r) or number(r) == 2) and _centered(k, l):
                return True
    return False


def _centered(k: Kernel, node: Node) -> bool:
    """The squared quantity is `x - mean` (itself or through the names it is computed from); a raw
    mean of squares (RMSNorm) is not a variance."""
    exprs = [node] + [rhs for n in identifiers(node) for _, rhs in k.deps.defs.get(n, [])]
    return any(n.type == "binary_operator" and text(n.child_by_field_name("operator")) == "-"
               for e in exprs for n in walk(e))


def _minus_one(node: Node) -> Node | None:
    """X for `(X - 1)` / `(X - 1.0)`."""
    n = unparen(node)
    if n.type == "binary_operator" and text(n.child_by_field_name("operator")) == "-" and \
            number(n.child_by_field_name("right")) == 1:
        return n.child_by_field_name("left")
    return None


class VarianceBiased(Recipe):
    id = "variance_biased"
    bug_classes = ("normalization_formula",)
    symptoms = ("constant_factor", "intermediate_wrong", "whole_rows_wrong", "precision_noise")
    description = "Variance divisor N-1 vs N: propose the other one (the reference decides)."

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            for stmt in k.nodes("assignment"):
                if not _is_variance(k, stmt):
                    continue
                rhs = stmt.child_by_field_name("right")
                divs = [d for d in walk(rhs) if d.type == "binary_operator"
                        and text(d.child_by_field_name("operator")) == "/"]
                for d in divs:
                    right = d.child_by_field_name("right")
                    x = _minus_one(right)
                    if x is not None:
                        yield self.patch(s, [Edit.replace(right, paren(x))],
                                         f"biased variance: divide by {text(x)} at line {line(d)}")
                    elif unparen(right).type in ("identifier", "call", "attribute") or \
                            number(right) is None:
                        yield self.patch(s, [Edit.replace(right, f"({text(right)} - 1)")],
                                         f"unbiased variance: divide by {text(right)} - 1 at line {line(d)}")


# -------------------------------------------------------------------------------------------------
def _is_eps(k: Kernel, node: Node) -> bool:
    n = unparen(node)
    if n.type == "identifier":
        return bool(EPS_NAME.match(text(n)))
    v = number(n)
    return v is not None and 0 < v <= 1e-2


class EpsInsideSqrt(Recipe):
    id = "eps_inside_sqrt"
    bug_classes = ("normalization_formula",)
    symptoms = ("intermediate_wrong", "precision_noise", "fails_small_magnitude", "whole_rows_wrong",
                "nan_in_output", "inf_in_output")
    description = "1/(sqrt(var)+eps) -> rsqrt(var+eps); a kernel's unused eps added under the root."

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            edits = []
            for add in k.nodes("binary_operator"):
                if text(add.child_by_field_name("operator")) != "+":
                    continue
                a, b = add.child_by_field_name("left"), add.child_by_field_name("right")
                sq, eps = (a, b) if _is_eps(k, b) else (b, a)
                sq = unparen(sq)
                if not _is_eps(k, eps) or sq.type != "call" or s.call_name(sq) != "tl.sqrt":
                    continue
                v = call_arg(sq, 0, "x")
                inner = f"{text(v)} + {text(eps)}"
                div = add.parent
                while div is not None and div.type == "parenthesized_expression":
                    div = div.parent
                if div is not None and div.type == "binary_operator" and \
                        text(div.child_by_field_name("operator")) == "/" and \
                        number(div.child_by_field_name("left")) == 1 and \
                        unparen(div.child_by_field_name("right")).start_byte == add.start_byte:
                    edits.append(Edit.replace(div, f"{s.tl}.rsqrt({inner})"))
                else:
                    edits.append(Edit.replace(add, f"{s.tl}.sqrt({inner})"))
            if edits:
                yield self.patch(s, edits, f"move eps inside the square root in {k.name}")
            yield from self._unused_eps(s, k)

    def _unused_eps(self, s: Source, k: Kernel):
        eps = [p.name for p in k.params if EPS_NAME.match(p.name)]
        if len(eps) != 1 or eps[0] in identifiers(k.body):
            return
        roots = k.calls("tl.sqrt", "tl.rsqrt")
        for r in roots:
            v = call_arg(r, 0, "x")
            yield self.patch(s, [Edit.replace(v, f"{text(v)} + {eps[0]}")],
                             f"add the unused {eps[0]} under the root at line {line(r)}")
