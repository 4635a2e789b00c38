"""Mutations: the kb backend's last resort when no recipe locates a site (diagnosis lists them too).

Small, systematic edits at the places where near-miss kernels most often go wrong but no recipe has a
bug shape to recognise: a broadcast along the wrong axis (`v[:, None]` vs `v[None, :]`), per-channel
index arithmetic (`i % C` vs `i // C` vs `(i // S) % C`), swapped program-id axes, and off-by-one
comparisons in `tl.where`. Each mutation is a full new source; the repair loop verifies it like any
other proposal, so a wrong guess costs one screen of the failing checks.
"""
from __future__ import annotations

from debugger.recipes.base import Patch
from debugger.recipes.syntax import Source
from debugger.source.edits import Edit, apply_edits
from debugger.source.tree import line, parses, text, walk


def _broadcast_swaps(s: Source, data: bytes) -> list[Patch]:
    out = []
    for k in s.kernels:
        for n in walk(k.body):
            if n.type != "subscript":
                continue
            t = text(n)
            value = text(n.child_by_field_name("value"))
            rest = t[len(value):].replace(" ", "")
            swap = {"[:,None]": "[None, :]", "[None,:]": "[:, None]"}.get(rest)
            if swap:
                out.append(Patch("mutate_broadcast_axis", f"broadcast {value} along the other axis in {k.name}",
                                 apply_edits(data, [Edit.replace(n, value + swap)]), [line(n)], "broadcast_axis"))
    return out


def _index_arith(s: Source, data: bytes) -> list[Patch]:
    out = []
    for k in s.kernels:
        ints = [p.name for p in k.params if not p.constexpr and not p.name.endswith("ptr") and "stride" not in p.name]
        for n in walk(k.body):
            if n.type != "binary_operator":
                continue
            op = next((c.type for c in n.children if c.type in ("%", "//")), None)
            if op is None:
                continue
            left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
            if left is None or right is None or right.type != "identifier":
                continue
            a, c = text(left), text(right)
            alts = []
            if op == "%":
                alts.append((f"{a} // {c}", f"{a} // {c}"))
                for y in ints:
                    if y != c and y not in a:
                        alts.append((f"({a} // {y}) % {c}", f"({a} // {y}) % {c}"))
            else:
                alts.append((f"{a} % {c}", f"{a} % {c}"))
            for new, desc in alts:
                out.append(Patch("mutate_index_arithmetic", f"index with {desc} instead of {text(n)} in {k.name}",
                                 apply_edits(data, [Edit.replace(n, new)]), [line(n)], "broadcast_axis"))
    return out


def _where_comparisons(s: Source, data: bytes) -> list[Patch]:
    out = []
    swap = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}
    for k in s.kernels:
        for call in k.calls("tl.where"):
            cond = call.child_by_field_name("arguments")
            if cond is None or not cond.named_children:
                continue
            c = cond.named_children[0]
            if c.type != "comparison_operator":
                continue
            ops = [ch for ch in c.children if ch.type in swap]
            if len(ops) != 1:
                continue
            op = ops[0]
            new = apply_edits(data, [Edit.replace(op, swap[op.type])])
            out.append(Patch("mutate_where_boundary", f"use {swap[op.type]} in the tl.where condition of {k.name}",
                             new, [line(op)], "activation_formula"))
    return out


def mutations(src: str) -> list[Patch]:
    """Every mutation that yields a parseable source, in a stable order."""
    s = Source(src)
    if not s.ok:
        return []
    data = src.encode()
    seen = set()
    out = []
    for p in _broadcast_swaps(s, data) + _index_arith(s, data) + _where_comparisons(s, data):
        if p.new_src in seen or p.new_src == src or not parses(p.new_src):
            continue
        seen.add(p.new_src)
        out.append(p)
    return out
