"""CUDA facts of slice coverage: a kernel whose own code limits it to the first slice of a batched launch.

- cuda_guard_on_fused_axis: a block index that the kernel decodes as a fused axis (`b = blockIdx.z / C;
  c = blockIdx.z % C`, the host launching `batch * C` blocks on it) is bounded by one factor only
  (`if (blockIdx.z >= C) return;`): every block past the first C exits, so only batch element 0 is
  computed.
- cuda_index_fixed_at_zero: a local index fixed at 0 (`int batch_idx = 0;`, never reassigned) that the
  global offsets read, while an integer parameter that would bound it (`batch_size`) is never read:
  the kernel computes one slice of what it was handed.

Both analyses return what the recipes in recipes/coverage.py rewrite, so fact and fix see the same thing.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from debugger.lang import Fact
from debugger.lang.cuda.access import accesses, inside
from debugger.lang.cuda.unit import Function, identifiers, int_params
from debugger.source.tree import ancestors, text, unparen

BLOCK_AXIS = re.compile(r"^blockIdx\s*\.\s*([xyz])$")
_STEM_PREFIX = re.compile(r"^(?:num_|n_|total_)")
_STEM_SUFFIX = re.compile(r"(?:_?(?:idx|index|id|size|count|num|dim|len))$")
BATCH_LIKE = re.compile(r"^(?:b|n|batch\w*|sample\w*|bi|ni)$", re.I)
EXIT_OPS = (">=", ">")
ENTER_OPS = ("<", "<=")


def stem(name: str) -> str:
    """`batch_idx`, `batch_size`, `num_batches` -> `batch`: what an index and its bound share."""
    s = _STEM_SUFFIX.sub("", _STEM_PREFIX.sub("", name.lower()))
    return re.sub(r"(?<=[a-z]{3})e?s$", "", s) or name.lower()


def bound_choices(fn: Function, index: str, exclude: set[str] = frozenset()) -> list[str]:
    """Integer parameters that could bound `index`, likeliest first: the same stem (`batch_idx` ->
    `batch_size`), then a stem the index's starts (`b` -> `batch`), then for a batch-like index (`n`,
    `b`, `sample`) a batch-like parameter (`batch_size`, `N`)."""
    want = stem(index)
    ranked = []
    for p in int_params(fn):
        if p in exclude:
            continue
        ps = stem(p)
        if ps == want:
            ranked.append((0, p))
        elif want and ps.startswith(want):
            ranked.append((1, p))
        elif BATCH_LIKE.match(index) and BATCH_LIKE.match(ps):
            ranked.append((2, p))
    return [p for _, p in sorted(ranked, key=lambda r: r[0])]


def _fact(tag: str, fn: Function, node: Node, message: str) -> Fact:
    return Fact(tag, message, fn.unit.pyline(node), "cuda", fn.name)


# -- a guard on one factor of a fused block axis ------------------------------------------------------------
@dataclass(frozen=True)
class FusedGuard:
    comparison: Node   # `v >= C` (or `v < C`)
    index: str         # v: `blockIdx.z` or a local alias of it
    axis: str          # x, y or z
    extent: Node       # C
    quotient: str | None  # b of `b = v / C`, when the kernel names it
    division: str      # the decoding division's text


def _block_aliases(fn: Function) -> dict[str, str]:
    """Locals whose only definition is a bare `blockIdx.a` -> a."""
    out = {}
    for name, values in fn.defs.items():
        if len(values) == 1:
            m = BLOCK_AXIS.match(text(unparen(values[0])).replace(" ", ""))
            if m:
                out[name] = m.group(1)
    return out


def _in_condition(node: Node, fn: Function) -> bool:
    for a in ancestors(node):
        if a == fn.body:
            return False
        if a.type == "if_statement":
            cond = a.child_by_field_name("condition")
            return cond is not None and inside(node, cond)
    return False


def fused_axis_guards(fn: Function) -> list[FusedGuard]:
    aliases = _block_aliases(fn)

    def axis_of(node: Node) -> tuple[str, str] | None:
        node = unparen(node)
        t = text(node).replace(" ", "")
        m = BLOCK_AXIS.match(t)
        if m:
            return t, m.group(1)
        if node.type == "identifier" and t in aliases:
            return t, aliases[t]
        return None

    divisions = []  # (axis, divisor text, quotient name or None)
    for b in fn.nodes("binary_expression"):
        if text(b.child_by_field_name("operator")) != "/":
            continue
        src = axis_of(b.child_by_field_name("left"))
        if src is None:
            continue
        parent = b
        while parent.parent is not None and parent.parent.type == "parenthesized_expression":
            parent = parent.parent
        quotient = None
        holder = parent.parent
        if holder is not None and holder.type == "init_declarator":
            quotient = text(holder.child_by_field_name("declarator"))
        elif holder is not None and holder.type == "assignment_expression":
            quotient = text(holder.child_by_field_name("left"))
        divisions.append((src[1], re.sub(r"\s+", "", text(b.child_by_field_name("right"))), quotient, text(b)))
    if not divisions:
        return []
    out = []
    for cmp in fn.nodes("binary_expression"):
        op = text(cmp.child_by_field_name("operator"))
        if op not in EXIT_OPS + ENTER_OPS or not _in_condition(cmp, fn):
            continue
        src = axis_of(cmp.child_by_field_name("left"))
        if src is None:
            continue
        extent = cmp.child_by_field_name("right")
        key = re.sub(r"\s+", "", text(extent))
        hits = [d for d in divisions if d[0] == src[1] and d[1] == key]
        if hits:
            out.append(FusedGuard(cmp, src[0], src[1], extent, hits[0][2], hits[0][3]))
    return out


def fused_guard_facts(fn: Function) -> list[Fact]:
    return [_fact("cuda_guard_on_fused_axis", fn, g.comparison,
                  f"{text(g.comparison)} in {fn.name} bounds blockIdx.{g.axis}, which the kernel decodes as "
                  f"{g.quotient + ' = ' if g.quotient else ''}{g.division}: every block past the first "
                  f"{text(g.extent)} exits, so only the first slice is computed") for g in fused_axis_guards(fn)][:1]


# -- an index fixed at zero with its bound never read ---------------------------------------------------
@dataclass(frozen=True)
class FixedIndex:
    name: str          # the local fixed at 0
    declaration: Node  # its declaration statement
    bounds: list[str]  # unread integer parameters that could bound it, likeliest first


def fixed_zero_indices(fn: Function) -> list[FixedIndex]:
    if fn.body is None:
        return []
    read = identifiers(fn.body)
    unread = [p for p in int_params(fn) if p not in read]
    if not unread:
        return []
    offsets = [a.index for a in accesses(fn) if not a.shared]
    out = []
    for name, decl in fn.declared.items():
        values = fn.defs.get(name, [])
        if len(values) != 1 or text(unparen(values[0])) != "0" or decl.parent is None \
                or decl.parent.type != "compound_statement":
            continue
        if any(n.type == "update_expression" and text(n).strip("+-") == name for n in fn.nodes("update_expression")):
            continue
        if not any(name in fn.deps(o) for o in offsets):
            continue
        bounds = [p for p in bound_choices(fn, name) if p in unread]
        if not bounds and len(unread) == 1 and BATCH_LIKE.search(name):
            bounds = unread
        if bounds:
            out.append(FixedIndex(name, decl, bounds))
    return out


def fixed_index_facts(fn: Function) -> list[Fact]:
    return [_fact("cuda_index_fixed_at_zero", fn, f.declaration,
                  f"{text(f.declaration).strip()} in {fn.name}: the offsets read {f.name}, fixed at 0, while the "
                  f"parameter {f.bounds[0]} that bounds it is never read: the kernel computes only the first "
                  f"{f.name} slice") for f in fixed_zero_indices(fn)][:1]


def coverage_facts(fn: Function) -> list[Fact]:
    return fused_guard_facts(fn) + fixed_index_facts(fn)


__all__ = ["FixedIndex", "FusedGuard", "bound_choices", "coverage_facts", "fixed_zero_indices", "fused_axis_guards",
           "stem"]
