"""Scan recipe: inclusive vs exclusive cumulative ops, direction, and the carry between the blocks
of a row that a kernel scans in a loop."""
from __future__ import annotations

from debugger.recipes.base import Recipe
from debugger.recipes.indexing import loop_of
from debugger.recipes.reductions import assigned_names, fresh_name, insert_before
from debugger.recipes.syntax import Kernel, Source
from debugger.source.edits import Edit
from debugger.source.tree import Node, call_arg, call_args, identifiers, line, statement_of, text, unparen, walk

SCANS = ("tl.cumsum", "tl.cumprod")


def _after(s: Source, stmt: Node, code: str) -> Edit:
    end = s.data.find(b"\n", stmt.end_byte)
    end = len(s.data) if end < 0 else end
    return Edit.insert(end, f"\n{s.indent_of(stmt)}{code}")


class ScanInclusive(Recipe):
    id = "scan_inclusive"
    bug_classes = ("scan_semantics",)
    symptoms = ("shifted_by_one", "whole_rows_wrong", "tail_block_wrong", "offset_error", "large_error")
    description = "Scan semantics: inclusive <-> exclusive, direction, and the carry between blocks."

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            for c in k.calls("tl.associative_scan"):
                yield from self._combine_carry(s, k, c)
            for c in k.calls(*SCANS):
                x = call_arg(c, 0, "input")
                if x is None:
                    continue
                yield from self._carry(s, k, c, x)
                yield from self._inclusive(s, c, x)
                yield from self._direction(s, c)
                yield from self._block_order(s, k, c)

    def _inclusive(self, s: Source, c: Node, x: Node):
        name = s.call_name(c)
        undo = {"tl.cumsum": "-", "tl.cumprod": "/"}[name]
        p = c.parent
        while p is not None and p.type == "parenthesized_expression":
            p = p.parent
        if p is not None and p.type == "binary_operator" and text(p.child_by_field_name("operator")) == undo \
                and unparen(p.child_by_field_name("left")).start_byte == c.start_byte \
                and text(unparen(p.child_by_field_name("right"))) == text(unparen(x)):
            yield self.patch(s, [Edit.replace(p, text(c))], f"inclusive scan at line {line(c)}")
        elif name == "tl.cumsum":
            yield self.patch(s, [Edit.replace(c, f"({text(c)} - {text(x)})")],
                             f"exclusive scan at line {line(c)}")

    def _carry(self, s: Source, k: Kernel, c: Node, x: Node):
        """A loop over blocks of the scanned row must add the running total of earlier blocks."""
        loop = loop_of(k, c)
        stmt = statement_of(c)
        names = assigned_names(stmt)
        if loop is None or len(names) != 1:
            return
        res = names.pop()
        axis = call_arg(c, 1, "axis")
        axis_t = text(axis) if axis is not None else "0"
        in_loop = lambda st: loop.body.start_byte <= st.start_byte < loop.body.end_byte  # noqa: E731
        before = {n for n, defs in k.deps.defs.items()
                  if any(st.start_byte < loop.node.start_byte for st, _ in defs)}
        updated = {n for n, defs in k.deps.defs.items() if any(in_loop(st) for st, _ in defs)}
        # a carry that is added but never updated: add the update
        stale = [n for n in identifiers(statement_of(c)) & before - updated if n != res]
        if s.call_name(c) != "tl.cumsum":
            yield from self._carry_source(s, k, loop, res, before & updated)
            return
        if stale:
            yield self.patch(s, [_after(s, stmt, f"{stale[0]} += {s.tl}.sum({text(x)}, axis={axis_t})")],
                             f"update the carry {stale[0]} after each block of the scan at line {line(c)}")
            return
        yield from self._carry_source(s, k, loop, res, before & updated)
        carried = [n for n, defs in k.deps.defs.items()
                   if any(st.type == "augmented_assignment" and in_loop(st) for st, _ in defs)]
        if any(n in k.deps.closure({res}) or res in k.deps.closure({n}) for n in carried):
            return
        carry = fresh_name(k, "carry")
        edits = [insert_before(s, loop.node, f"{carry} = {s.tl}.full([], 0, {s.tl}.float32)"),
                 _after(s, stmt, f"{res} = {res} + {carry}"),
                 _after(s, stmt, f"{carry} += {s.tl}.sum({text(x)}, axis={axis_t})")]
        yield self.patch(s, edits, f"carry the running total between blocks of the scan at line {line(c)}")

    def _carry_source(self, s: Source, k: Kernel, loop, res: str, carries: set[str]):
        """The carry is updated from the block's own scan `p` where the carried result `y = p * carry`
        (or `p + carry`) is meant: the next block then misses the earlier ones."""
        for carry in carries:
            full = [n for n, defs in k.deps.defs.items() if len(defs) == 1
                    and {res, carry} <= identifiers(defs[0][1]) and n not in (res, carry)]
            if len(full) != 1:
                continue
            for st, rhs in k.deps.defs[carry]:
                if st.start_byte > loop.node.start_byte and res in identifiers(rhs):
                    edits = [Edit.replace(n, full[0]) for n in walk(rhs)
                             if n.type == "identifier" and text(n) == res]
                    yield self.patch(s, edits, f"carry {full[0]} (the carried result), not {res}, "
                                               f"at line {line(st)}")

    def _combine_carry(self, s: Source, k: Kernel, c: Node):
        """An associative scan over the blocks of a row keeps a running carry (`carry = f(carry, ...)`)
        but never folds it into the block's result: combine it, with the scan's own function."""
        loop = loop_of(k, c)
        stmt = statement_of(c)
        names = assigned_names(stmt)
        fn = call_arg(c, 2, "combine_fn")
        if loop is None or len(names) != 1 or fn is None:
            return
        res = names.pop()
        in_loop = lambda st: loop.body.start_byte <= st.start_byte < loop.body.end_byte  # noqa: E731
        stored = set()
        for st in k.calls("tl.store"):
            if in_loop(st):
                value = call_arg(st, 1, "value")
                stored |= k.deps.closure(identifiers(value)) if value is not None else set()
        for carry, defs in k.deps.defs.items():
            updates = [rhs for st, rhs in defs if in_loop(st) and rhs is not None]
            if carry == res or not updates or carry in stored:
                continue
            if any(carry in identifiers(r) and (res in identifiers(r) or res in k.deps.closure(identifiers(r)))
                   for r in updates):
                yield self.patch(s, [_after(s, stmt, f"{res} = {text(fn)}({res}, {carry})")],
                                 f"fold the running carry {carry} into each block's scan at line {line(c)}")

    def _block_order(self, s: Source, k: Kernel, c: Node):
        """A reverse scan carried across the blocks of a row must visit the blocks last to first;
        a loop that walks them first to last carries the wrong total into every block."""
        pos, kw = call_args(c)
        rev = kw.get("reverse") or (pos[2] if len(pos) > 2 else None)
        loop = loop_of(k, c)
        if rev is None or text(rev) != "True" or loop is None:
            return
        start_t = text(loop.start) if loop.start is not None else "0"
        if start_t != "0":
            return
        stop = f"({text(loop.stop)})" if loop.stop.type not in ("identifier", "integer") else text(loop.stop)
        if loop.step is None:
            mirrored = f"({stop} - 1 - {loop.var})"
        else:
            step = f"({text(loop.step)})" if loop.step.type not in ("identifier", "integer") else text(loop.step)
            mirrored = f"(({stop} - 1) // {step} * {step} - {loop.var})"
        uses = [n for n in walk(loop.body) if n.type == "identifier" and text(n) == loop.var]
        if not uses:
            return
        yield self.patch(s, [Edit.replace(n, mirrored) for n in uses],
                         f"visit the blocks last to first for the reverse scan at line {line(c)}")

    def _direction(self, s: Source, c: Node):
        pos, kw = call_args(c)
        rev = kw.get("reverse") or (pos[2] if len(pos) > 2 else None)
        if rev is None:
            yield self.patch(s, [Edit.insert(c.child_by_field_name("arguments").end_byte - 1,
                                             ", reverse=True")], f"reverse scan at line {line(c)}")
        else:
            flipped = "False" if text(rev) == "True" else "True"
            yield self.patch(s, [Edit.replace(rev, flipped)], f"scan direction reverse={flipped}")
