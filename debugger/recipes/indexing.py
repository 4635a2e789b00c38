"""What a kernel's loads and stores index: pointer decomposition, bounds, loops and reductions.

A pointer expression `x_ptr + row * stride + off + cols[None, :]` is split into its additive terms;
terms that move within the tensor's indexed extent (arange- or loop-derived, or a program id times a
block size) are *index parts*, grouped by their broadcast suffix (`[:, None]`, `[None, :]`, none);
the rest (base pointers, `row * stride`) are row bases. A mask is one comparison per group.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from debugger.recipes.syntax import ARANGE, LOOP, PID, Kernel, Source
from debugger.source.tree import (Node, call_arg, call_args, enclosing, identifiers, inside, number, same, text,
                                  unparen, walk)

MASK_POS = {"tl.load": 1, "tl.store": 2}
REDUCTIONS = {"tl.max": "max", "tl.argmax": "max", "tl.min": "min", "tl.argmin": "min",
              "tl.sum": "sum", "tl.cumsum": "sum", "tl.cumprod": "prod", "tl.xor_sum": "sum"}
IDENTITY = {"max": '-float("inf")', "min": 'float("inf")', "sum": "0.0", "prod": "1.0"}
ROW_TOKENS = {"row", "rows", "m", "nrows", "batch", "height", "h"}
COL_TOKENS = {"col", "cols", "n", "ncols", "d", "dim", "hidden", "width", "w", "features", "feat"}


def mask_arg(s: Source, call: Node) -> Node | None:
    name = s.call_name(call)
    return call_arg(call, MASK_POS[name], "mask") if name in MASK_POS else None


def other_arg(call: Node) -> Node | None:
    return call_arg(call, 2, "other")


def terms(node: Node, op: str = "+") -> list[Node]:
    """Operands of nested `op` chains, looking through parentheses."""
    node = unparen(node)
    if node.type == "binary_operator" and text(node.child_by_field_name("operator")) == op:
        return terms(node.child_by_field_name("left"), op) + terms(node.child_by_field_name("right"), op)
    return [node]


def is_index(k: Kernel, node: Node) -> bool:
    atoms = k.deps.of(node)
    return ARANGE in atoms or LOOP in atoms


def has_pid(k: Kernel, node: Node) -> bool:
    return any(a.startswith(PID) for a in k.deps.of(node))


def _block_offset(k: Kernel, node: Node, depth: int = 0) -> bool:
    """`pid * BLOCK` (directly or through a variable): the start of this program's block."""
    node = unparen(node)
    if node.type == "identifier" and depth < 3:
        defs = k.deps.defs.get(text(node), [])
        return len(defs) == 1 and _block_offset(k, defs[0][1], depth + 1)
    factors = terms(node, "*")
    if len(factors) < 2 or not has_pid(k, node):
        return False
    rest = [f for f in factors if not has_pid(k, f)]
    return bool(rest) and all(number(f) is not None or (f.type == "identifier" and k.is_constexpr(text(f)))
                              for f in rest)


def _pointer_var(k: Kernel, node: Node) -> Node | None:
    """For a local pointer variable, the right-hand side of its first plain assignment."""
    if node.type != "identifier" or k.param(text(node)):
        return None
    for stmt, rhs in k.deps.defs.get(text(node), []):
        if stmt.type == "assignment":
            return rhs
    return None


def index_parts(k: Kernel, ptr: Node, depth: int = 0) -> list[Node]:
    """The index parts of a pointer expression (see the module docstring)."""
    out = []
    for t in terms(ptr):
        if t.type == "binary_operator" and text(t.child_by_field_name("operator")) == "*":
            idx = [f for f in terms(t, "*") if is_index(k, f)]
            if len(idx) == 1:
                out.append(idx[0])
            elif idx or _block_offset(k, t):
                out.append(t)
            continue
        pv = _pointer_var(k, t) if depth < 3 else None
        sub = index_parts(k, pv, depth + 1) if pv is not None else []
        if pv is not None and (any(k.param(n) and k.param(n).pointer_like for n in k.deps.of(t))
                               or any(suffix_of(p)[0] for p in sub)):
            out.extend(sub)
        elif is_index(k, t) or _block_offset(k, t):
            out.append(t)
    return out


def suffix_of(node: Node) -> tuple[str, Node]:
    """(`[:, None]`-like broadcast suffix, the indexed value) of a subscript; for arithmetic over
    one suffixed operand and scalars (`(offs_l[None, :] + k)`), that operand's suffix and the node;
    ('', node) otherwise."""
    node = unparen(node)
    if node.type == "subscript":
        subs = node.children_by_field_name("subscript")
        if subs and all(c.type in ("none", "slice") for c in subs):
            value = node.child_by_field_name("value")
            return text(node)[len(text(value)):].replace(" ", ""), value
    if node.type == "binary_operator":
        found = {suffix_of(c)[0] for c in (node.child_by_field_name("left"), node.child_by_field_name("right"))}
        found.discard("")
        if len(found) == 1:
            return found.pop(), node
    return "", node


def groups(k: Kernel, ptr: Node) -> dict[str, list[Node]] | None:
    """Index parts by broadcast suffix, or None when the pointer has no index part or mixes
    suffixed parts with an unsuffixed tile (a case whose per-axis mask cannot be told). Unsuffixed
    scalar parts (an inner loop's variable, not a tl.arange) shift the tile and are left out."""
    out: dict[str, list[Node]] = {}
    for p in index_parts(k, ptr):
        out.setdefault(suffix_of(p)[0], []).append(p)
    if "" in out and len(out) > 1:
        if any(ARANGE in k.deps.of(p) for p in out[""]):
            return None
        del out[""]
    return out or None


def signature(k: Kernel, ptr: Node) -> tuple | None:
    g = groups(k, ptr)
    if g is None:
        return None
    return tuple(sorted((suf, tuple(sorted(text(p).replace(" ", "") for p in parts)))
                        for suf, parts in g.items()))


def is_block_ptr(k: Kernel, call: Node) -> bool:
    """Loads/stores through tl.make_block_ptr / tensor descriptors use boundary_check, not masks."""
    if call_arg(call, 99, "boundary_check") is not None:
        return True
    ptr = call_arg(call, 0, "pointer")
    for name in k.deps.of(ptr):
        for _, rhs in k.deps.defs.get(name, []):
            if k.src.calls(rhs, "tl.make_block_ptr", "tl.advance", "tl.make_tensor_descriptor"):
                return True
    return False


@dataclass
class Comparison:
    node: Node
    index: Node      # the side that depends on an arange/loop
    op: str          # normalised so that the index is on the left
    bound: Node


FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}


def comparisons(k: Kernel, root: Node | None = None) -> list[Comparison]:
    out = []
    for n in walk(root if root is not None else k.body):
        if n.type != "comparison_operator" or n.named_child_count != 2:
            continue
        left, right = n.named_children
        ops = [c for c in n.children if c.type in FLIP]
        if len(ops) != 1:
            continue
        op = ops[0].type
        if is_index(k, left) and not is_index(k, right):
            out.append(Comparison(n, left, op, right))
        elif is_index(k, right) and not is_index(k, left):
            out.append(Comparison(n, right, FLIP[op], left))
    return out


def name_class(name: str) -> str | None:
    """'row' / 'col' when a name visibly refers to one axis of a 2-D tensor."""
    tokens = {t.lower() for t in re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z])", name) if t}
    if tokens & {"row", "rows", "nrows"}:
        return "row"
    if tokens & {"col", "cols", "ncols"}:
        return "col"
    if tokens & ROW_TOKENS:
        return "row"
    if tokens & COL_TOKENS:
        return "col"
    return None


def suffix_class(suffix: str) -> str | None:
    s = suffix.replace(" ", "")
    if s == "[:,None]":
        return "row"
    if s == "[None,:]":
        return "col"
    return None


def size_params(k: Kernel, prefer: str | None = None) -> list[str]:
    """Size-like parameters, those of class `prefer` first."""
    names = [p.name for p in k.params if p.size_like and not p.constexpr]
    return sorted(names, key=lambda n: 0 if prefer and name_class(n) == prefer else 1)


@dataclass
class Loop:
    node: Node
    var: str
    start: Node | None
    stop: Node
    step: Node | None

    @property
    def body(self) -> Node:
        return self.node.child_by_field_name("body")


def loop_info(s: Source, node: Node) -> Loop | None:
    """A `for v in range(...)` (or tl.range / tl.static_range) loop."""
    if node.type != "for_statement":
        return None
    target = node.child_by_field_name("left")
    it = unparen(node.child_by_field_name("right"))
    if target is None or target.type != "identifier" or it.type != "call" or \
            s.call_name(it) not in ("range", "tl.range", "tl.static_range"):
        return None
    pos, _ = call_args(it)
    if not pos or len(pos) > 3:
        return None
    if len(pos) == 1:
        return Loop(node, text(target), None, pos[0], None)
    return Loop(node, text(target), pos[0], pos[1], pos[2] if len(pos) == 3 else None)


def loops(k: Kernel) -> list[Loop]:
    return [l for n in k.nodes("for_statement") if (l := loop_info(k.src, n)) is not None]


def loop_of(k: Kernel, node: Node) -> Loop | None:
    """The innermost range loop of the kernel around `node`."""
    f = enclosing(node, "for_statement")
    while f is not None and inside(f, k.fn):
        l = loop_info(k.src, f)
        if l is not None:
            return l
        f = enclosing(f, "for_statement")
    return None


def assigned_var(call: Node) -> str | None:
    """`x` for `x = <call>`, `x = (<call>)` or `x = <call>.to(...)`."""
    n = call
    while n.parent is not None:
        p = n.parent
        if p.type == "parenthesized_expression":
            n = p
            continue
        if p.type == "attribute" and same(p.child_by_field_name("object"), n) and \
                p.parent is not None and p.parent.type == "call" and \
                same(p.parent.child_by_field_name("function"), p):
            n = p.parent
            continue
        break
    p = n.parent
    if p is not None and p.type == "assignment" and same(p.child_by_field_name("right"), n):
        left = p.child_by_field_name("left")
        return text(left) if left.type == "identifier" else None
    return None


def derived(k: Kernel, var: str) -> set[str]:
    """`var` and every name whose value depends on it."""
    return {var} | {n for n in k.deps.direct if var in k.deps.closure({n}) and n != var}


@dataclass
class Reduction:
    """A reduction (`tl.sum(x)`) or running accumulation (`m = tl.maximum(m, x)`, `acc += x`)."""

    node: Node
    kind: str
    input: Node


def load_var(call: Node) -> str | None:
    """The variable a load's value is bound to: `x = tl.load(...)` (with `.to()`), or
    `x = tl.load(...) * scale` when the statement holds this one load."""
    var = assigned_var(call)
    if var is not None:
        return var
    n = call
    while n.parent is not None and n.parent.type in ("binary_operator", "parenthesized_expression",
                                                     "unary_operator", "argument_list", "call",
                                                     "attribute"):
        n = n.parent
    p = n.parent
    if p is None or p.type != "assignment" or not same(p.child_by_field_name("right"), n):
        return None
    left = p.child_by_field_name("left")
    loads = [c for c in walk(n) if c.type == "call" and text(c.child_by_field_name("function")).endswith("load")]
    return text(left) if left.type == "identifier" and len(loads) == 1 else None


def reductions_of(k: Kernel, var: str, after: int = 0) -> list[Reduction]:
    """The reductions and running accumulations whose input depends on `var`, in source order."""
    names = derived(k, var)
    out = []
    for c in k.calls(*REDUCTIONS):
        arg = call_arg(c, 0, "input")
        if c.start_byte >= after and arg is not None and identifiers(arg) & names:
            out.append(Reduction(c, REDUCTIONS[k.src.call_name(c)], arg))
    for stmt in k.nodes("assignment", "augmented_assignment"):
        if stmt.start_byte < after:
            continue
        left = stmt.child_by_field_name("left")
        rhs = stmt.child_by_field_name("right")
        if left is None or rhs is None or left.type != "identifier":
            continue
        acc = text(left)
        if stmt.type == "augmented_assignment":
            kind = {"+=": "sum", "*=": "prod"}.get(text(stmt.child_by_field_name("operator")))
            if kind and identifiers(rhs) & names and acc not in names - {acc} | {var}:
                out.append(Reduction(stmt, kind, rhs))
            continue
        rhs = unparen(rhs)
        if rhs.type == "call" and k.src.call_name(rhs) in ("tl.maximum", "tl.minimum"):
            pos, _ = call_args(rhs)
            if len(pos) == 2 and acc in (text(pos[0]), text(pos[1])):
                other = pos[1] if text(pos[0]) == acc else pos[0]
                if identifiers(other) & names:
                    out.append(Reduction(rhs, "max" if k.src.call_name(rhs) == "tl.maximum" else "min", other))
    return sorted(out, key=lambda r: r.node.start_byte)


def fill_kind(node: Node | None) -> str | None:
    """'max'/'min'/'sum'/'prod' for a fill value that is that reduction's identity."""
    if node is None:
        return None
    t = text(node).replace(" ", "").replace("'", '"')
    if "inf" in t:
        return "max" if t.startswith("-") or '"-inf"' in t else "min"
    v = number(node)
    if v is None:
        return None
    if v <= -1e30:
        return "max"
    if v >= 1e30:
        return "min"
    return {0.0: "sum", 1.0: "prod"}.get(v)


def pointer_bases(k: Kernel, ptr: Node, depth: int = 0) -> set[str]:
    """Kernel parameters a pointer expression is based on (its unmultiplied parameter terms)."""
    out = set()
    for t in terms(ptr):
        t = unparen(t)
        if t.type != "identifier":
            continue
        name = text(t)
        if k.param(name):
            out.add(name)
        elif depth < 3:
            for _, rhs in k.deps.defs.get(name, []):
                out |= pointer_bases(k, rhs, depth + 1)
                for c in k.src.calls(rhs, "tl.make_block_ptr", "tl.make_tensor_descriptor"):
                    base = call_arg(c, 0, "base")
                    if base is not None:
                        out |= pointer_bases(k, base, depth + 1)
    return out


def pointer_params(k: Kernel) -> set[str]:
    """Parameters used as the base of a tl.load / tl.store / atomic pointer."""
    out = set()
    for c in k.calls("tl.load", "tl.store", "tl.atomic_add", "tl.atomic_max", "tl.atomic_min",
                     "tl.atomic_xchg", "tl.atomic_cas"):
        ptr = call_arg(c, 0, "pointer")
        if ptr is not None:
            out |= pointer_bases(k, ptr)
    return out


def is_pointer(k: Kernel, name: str) -> bool:
    p = k.param(name)
    return p is not None and (p.pointer_like or name in pointer_params(k))
