"""Axis recipes: a reduction over the wrong axis of a 2-D tile, and per-channel parameters
broadcast or indexed along the wrong axis."""
from __future__ import annotations

import re

from debugger.recipes.base import Recipe
from debugger.recipes.indexing import (assigned_var, comparisons, groups, has_pid, index_parts, load_var,
                                       size_params, suffix_of)
from debugger.recipes.reductions import assigned_names
from debugger.recipes.syntax import ARANGE, Kernel, Source
from debugger.source.edits import Edit
from debugger.source.tree import Node, call_arg, identifiers, line, statement_of, text, unparen, walk

REDUCE = ("tl.max", "tl.min", "tl.sum", "tl.argmax", "tl.argmin")
FLIP_SUFFIX = {"[:,None]": "[None, :]", "[None,:]": "[:, None]"}
AXIS_OF = {"[:,None]": 0, "[None,:]": 1}


def tiled_axes(k: Kernel) -> set[int]:
    """Tile axes (0: `[:, None]`, 1: `[None, :]`) whose offsets carry this program's block offset."""
    out = set()
    for c in k.calls("tl.load", "tl.store"):
        ptr = call_arg(c, 0, "pointer")
        for p in index_parts(k, ptr) if ptr is not None else []:
            suffix, _ = suffix_of(p)
            if suffix in AXIS_OF and has_pid(k, p) and ARANGE in k.deps.of(p):
                out.add(AXIS_OF[suffix])
    return out


def suffixed_uses(k: Kernel, name: str) -> list[tuple[Node, str]]:
    """(subscript node, normalised suffix) for each `name[:, None]` / `name[None, :]` in the kernel."""
    out = []
    for n in walk(k.body):
        if n.type == "subscript" and text(n.child_by_field_name("value")) == name:
            suffix, _ = suffix_of(n)
            if suffix in FLIP_SUFFIX:
                out.append((n, suffix))
    return out


def flip_uses(k: Kernel, name: str) -> list[Edit]:
    return [Edit.replace(n, name + FLIP_SUFFIX[suf]) for n, suf in suffixed_uses(k, name)]


def stored_axis(k: Kernel, var: str) -> int | None:
    """The tile axis a reduced value is stored along: `tl.store(out + rn, s)` with `rn` used as
    `rn[None, :]` in the tiles keeps axis 1 (so the reduction must run over axis 0)."""
    names = {var} | {n for n in k.deps.direct if var in k.deps.closure({n})}
    axes = set()
    for st in k.calls("tl.store"):
        value = call_arg(st, 1, "value")
        if value is None or not identifiers(value) & names:
            continue
        for p in index_parts(k, call_arg(st, 0, "pointer")):
            if unparen(p).type == "identifier" and suffix_of(p)[0] == "":
                axis = index_axis(k, text(unparen(p)))
                if axis in AXIS_OF:
                    axes.add(AXIS_OF[axis])
    return axes.pop() if len(axes) == 1 else None


class SwapReductionAxis(Recipe):
    id = "swap_reduction_axis"
    bug_classes = ("reduction_axis",)
    symptoms = ("whole_rows_wrong", "whole_cols_wrong", "intermediate_wrong", "large_error", "all_wrong")
    description = "A 2-D tile reduced over the axis tiled across programs: reduce over the other axis."

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            tiled = tiled_axes(k)
            edits = []
            for c in k.calls(*REDUCE):
                axis = call_arg(c, 1, "axis")
                if axis is None or text(axis) not in ("0", "1"):
                    continue
                a = int(text(axis))
                names = assigned_names(statement_of(c))
                var = assigned_var(c) or (names.pop() if len(names) == 1 else None)
                kept = stored_axis(k, var) if var is not None else None
                if not (self.forced(hints) or (a in tiled and 1 - a not in tiled) or kept == a):
                    continue
                edits.append(Edit.replace(axis, str(1 - a)))
                if var is not None:
                    edits += flip_uses(k, var)
                p = c.parent
                if p is not None and p.type == "subscript" and suffix_of(p)[0] in FLIP_SUFFIX:
                    edits.append(Edit(c.end_byte, p.end_byte, FLIP_SUFFIX[suffix_of(p)[0]]))
            yield self.patch(s, edits, f"reduce over the other axis in {k.name}")


# -------------------------------------------------------------------------------------------------
def vector_loads(k: Kernel) -> list[tuple[Node, str]]:
    """(load, variable) for 1-D loads (no broadcast suffix in the pointer) bound to a variable."""
    out = []
    for c in k.calls("tl.load"):
        ptr = call_arg(c, 0, "pointer")
        g = groups(k, ptr) if ptr is not None else None
        var = load_var(c)
        if var is not None and (g is None or set(g) == {""}):
            out.append((c, var))
    return out


def index_axis(k: Kernel, name: str) -> str | None:
    """The suffix an offsets variable carries where the kernel builds its 2-D tiles."""
    found = {suf for _, suf in suffixed_uses(k, name)}
    return found.pop() if len(found) == 1 else None


def channel_exprs(k: Kernel, node: Node) -> list[Node]:
    """`X % C` / `X // C` sub-expressions (C a parameter) of an index."""
    out = []
    for n in walk(node):
        if n.type == "binary_operator" and text(n.child_by_field_name("operator")) in ("%", "//"):
            right = unparen(n.child_by_field_name("right"))
            if right.type == "identifier" and k.param(text(right)) and not k.param(text(right)).constexpr:
                out.append(n)
    return out


class BroadcastAxis(Recipe):
    id = "broadcast_axis"
    bug_classes = ("broadcast_axis",)
    symptoms = ("whole_rows_wrong", "whole_cols_wrong", "periodic_errors", "fails_param_redraw", "large_error")
    description = "A per-channel parameter broadcast or indexed along the wrong axis."

    def _propose(self, s: Source, hints: dict):
        forced = self.forced(hints)
        for k in s.kernels:
            for load, var in vector_loads(k):
                yield from self._suffix(s, k, load, var, forced)
                yield from self._channel_index(s, k, load, forced)

    def _suffix(self, s: Source, k: Kernel, load: Node, var: str, forced: bool):
        """`b = tl.load(b_ptr + offs_n)` used as `b[:, None]` while offs_n indexes axis 1."""
        uses = suffixed_uses(k, var)
        if not uses:
            return
        parts = index_parts(k, call_arg(load, 0, "pointer"))
        axes = {index_axis(k, text(unparen(p))) for p in parts if unparen(p).type == "identifier"}
        axes.discard(None)
        used = {suf for _, suf in uses}
        if forced or (len(axes) == 1 and len(used) == 1 and axes != used):
            yield self.patch(s, flip_uses(k, var), f"broadcast {var} along the other axis")
        if forced and len(axes) == 1 and axes == used:
            yield from self._other_axis(s, k, load, var, parts, axes.pop())

    def _other_axis(self, s: Source, k: Kernel, load: Node, var: str, parts: list[Node], axis: str):
        """Index the vector by the other axis's offsets (bias per column, not per row) and
        broadcast it along that axis."""
        mine = {text(unparen(p)) for p in parts if unparen(p).type == "identifier"}
        others = [n for n in k.deps.defs if n not in mine and index_axis(k, n) == FLIP_SUFFIX[axis].replace(" ", "")]
        for other in others[:2]:
            bound = next((text(c.bound) for c in comparisons(k) if text(suffix_of(c.index)[1]) == other), None)
            edits = flip_uses(k, var)
            for n in walk(load):
                if n.type == "identifier" and text(n) in mine:
                    edits.append(Edit.replace(n, other))
            if bound is not None:
                for c in comparisons(k, load):
                    if text(suffix_of(c.index)[1]) in mine:
                        edits.append(Edit.replace(c.bound, bound))
            yield self.patch(s, edits, f"index {var} by {other} and broadcast it along that axis")

    def _channel_index(self, s: Source, k: Kernel, load: Node, forced: bool):
        ptr = call_arg(load, 0, "pointer")
        exprs = channel_exprs(k, ptr)
        for name in identifiers(ptr):
            defs = k.deps.defs.get(name, [])
            if len(defs) == 1 and not k.param(name):
                exprs += channel_exprs(k, defs[0][1])
        used = identifiers(k.body)
        unused = [p for p in size_params(k) if p not in used]
        for e in exprs:
            op = text(e.child_by_field_name("operator"))
            x, c = e.child_by_field_name("left"), text(unparen(e.child_by_field_name("right")))
            # an existing channel variable the load does not use
            for name, defs in k.deps.defs.items():
                if len(defs) == 1 and re.search(rf"%\s*{re.escape(c)}\s*\)?\s*$", text(defs[0][1])) and \
                        name not in identifiers(ptr) and text(defs[0][1]) != text(e):
                    yield self.patch(s, [Edit.replace(e, name)], f"index the parameter by {name} at line {line(e)}")
            if op == "%":
                for q in (unused if not forced else unused + [p for p in size_params(k) if p not in unused]):
                    if q != c:
                        yield self.patch(s, [Edit.replace(x, f"({text(x)} // {q})")],
                                         f"channel index ({text(x)} // {q}) % {c} at line {line(e)}")
            if forced or unused:
                other = "//" if op == "%" else "%"
                yield self.patch(s, [Edit.replace(e.child_by_field_name("operator"), other)],
                                 f"channel index {text(x)} {other} {c} at line {line(e)}")
