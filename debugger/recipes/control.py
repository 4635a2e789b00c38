"""Control-flow recipe: an early `return` that skips a partly valid block.

`if (pid + 1) * BLOCK > n: return` leaves the last, partial block unwritten. The repair deletes the
guard and masks the block's loads and stores instead (composed with `add_mask`). Guards that skip
only wholly out-of-range programs (`if pid * BLOCK >= n`, `if row >= n_rows`) are left alone.
"""
from __future__ import annotations

import re

from debugger.recipes.base import Patch, Recipe
from debugger.recipes.masks import AddMask
from debugger.recipes.syntax import PID, Kernel, Source
from debugger.source.edits import Edit
from debugger.source.tree import Node, line, text, walk

BLOCK_END = re.compile(r"\+\s*1\b|\+\s*[A-Z_]*BLOCK\w*|\+\s*\w*_SIZE\b")


def early_returns(k: Kernel) -> list[Node]:
    """`if COND: return` statements (the body is only the return) of a kernel."""
    out = []
    for n in walk(k.body):
        if n.type != "if_statement":
            continue
        body = n.child_by_field_name("consequence")
        stmts = [c for c in body.named_children if c.type != "comment"] if body is not None else []
        if len(stmts) == 1 and stmts[0].type == "return_statement" and \
                not n.child_by_field_name("alternative"):
            out.append(n)
    return out


def skips_partial_block(k: Kernel, cond: Node) -> bool:
    """The condition tests the *end* of this program's block against a size."""
    if not any(a.startswith(PID) for a in k.deps.of(cond)):
        return False
    return bool(BLOCK_END.search(text(cond)))


class DropEarlyReturn(Recipe):
    id = "drop_early_return"
    bug_classes = ("unwritten_output",)
    symptoms = ("tail_block_wrong", "never_written", "programs_missing")
    description = "An early return skips the last partial block: delete it and mask the loads/stores."

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            for stmt in early_returns(k):
                cond = stmt.child_by_field_name("condition")
                if not (skips_partial_block(k, cond) or self.forced(hints)):
                    continue
                start = s.line_start(stmt)
                end = s.data.find(b"\n", stmt.end_byte)
                end = len(s.data) if end < 0 else end + 1
                removal = self.patch(s, [Edit(start, end, "")], f"delete the early return at line {line(stmt)}")
                if removal is None:
                    continue
                masked = AddMask().propose(removal.new_src)
                shift = s.src[start:end].count("\n")
                for m in masked[:3]:
                    sites = sorted({line(stmt)} | {l + shift if l >= line(stmt) else l for l in m.sites})
                    yield Patch(self.id, f"{removal.description}; {m.description}", m.new_src, sites,
                                self.bug_classes[0])
                yield removal
