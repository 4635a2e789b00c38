"""A thread that leaves the kernel before a barrier the rest of its block still reaches.

Tiled kernels load a tile into `__shared__` memory cooperatively - each thread one element - then
`__syncthreads()` and read their neighbours' elements. A thread-dependent early exit before that
(`if (row > col) return;` for a triangular product, `if (row >= M || col >= N) return;` at a ragged
edge) leaves the exited threads' slots of the tile unwritten, so the threads that stay read stale
shared memory, and a barrier not every thread of the block reaches is undefined behaviour besides
(gemini level1/14: 6% of the upper-triangular product wrong).

`exit_before_barrier(fn)` finds such an exit - an `if (cond) return;` among the kernel body's own
statements, `cond` derived from threadIdx, with a barrier in a later statement - and says whether it
can be moved after the last barrier: every global load between the exit and that barrier sits under a
condition of its own (an `if`, `?:` or `&&` inside that stretch) and no global store happens before the
last barrier. The analysis does not prove that condition bounds every index the exit bounded (opus
level3/50's `if (key_pos < hs)` bounds the thread, not the block's batch): a load left unbounded would
read past the edge for a thread whose result is then dropped, which the evaluation's layouts and shapes
(and compute-sanitizer on a GPU) judge. Fact `cuda_exit_before_barrier` (facts.py); recipe
`cuda_exit_after_barriers` (recipes/barrier_exit.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from debugger.lang.cuda.access import accesses, inside
from debugger.lang.cuda.unit import SYNC, THREAD, Function, identifiers
from debugger.source.tree import ancestors, text, walk

_GUARDS = ("if_statement", "conditional_expression")


@dataclass(frozen=True)
class BarrierExit:
    exit: Node           # the `if (cond) return;` statement
    condition: Node      # its condition (parenthesized)
    last_barrier: Node   # the last statement of the body holding a barrier
    movable: bool        # loads in between guarded on their own, no global store before the last barrier


def _statements(block: Node) -> list[Node]:
    return [c for c in block.named_children if c.type != "comment"]


def _syncs(node: Node) -> bool:
    return any(n.type == "call_expression" and SYNC.match(text(n.child_by_field_name("function")).split("::")[-1])
               for n in walk(node))


def _returns_only(stmt: Node) -> bool:
    """`return;` or `{ return; }` with no value."""
    if stmt.type == "compound_statement":
        inner = _statements(stmt)
        return len(inner) == 1 and _returns_only(inner[0])
    return stmt.type == "return_statement" and stmt.named_child_count == 0


def _guarded_within(node: Node, lo: int, hi: int) -> bool:
    for a in ancestors(node):
        if a.start_byte < lo:
            return False
        if a.type in _GUARDS and a.end_byte <= hi:
            return True
        if a.type == "binary_expression" and a.child_by_field_name("operator") is not None and \
                a.child_by_field_name("operator").type == "&&" and inside(node, a.child_by_field_name("right")):
            return True
    return False


def exit_before_barrier(fn: Function) -> BarrierExit | None:
    body = fn.body
    if body is None:
        return None
    stmts = _statements(body)
    for i, stmt in enumerate(stmts):
        if stmt.type != "if_statement" or stmt.child_by_field_name("alternative") is not None:
            continue
        consequence = stmt.child_by_field_name("consequence")
        condition = stmt.child_by_field_name("condition")
        if consequence is None or condition is None or not _returns_only(consequence):
            continue
        if THREAD not in fn.closure(identifiers(condition)):
            continue
        later = [s for s in stmts[i + 1:] if _syncs(s)]
        if not later:
            continue
        last = later[-1]
        lo, hi = stmt.end_byte, last.end_byte
        between = [a for a in accesses(fn) if lo <= a.node.start_byte and a.node.end_byte <= hi and not a.shared]
        movable = not any(a.store for a in between) and \
            all(_guarded_within(a.node, lo, hi) for a in between if not a.store)
        # a second exit or a value-returning return in between would leave threads out again
        movable = movable and not any(n.type == "return_statement" for s in stmts[i + 1:stmts.index(last) + 1]
                                      for n in walk(s))
        return BarrierExit(stmt, condition, last, movable)
    return None
