"""A thread that leaves the kernel before a barrier the rest of its block still reaches.

Tiled kernels load a tile into `__shared__` memory cooperatively - each thread one element - then
`__syncthreads()` and read their neighbours' elements. A thread-dependent early exit before that
(`if (row > col) return;` for a triangular product, `if (row >= M || col >= N) return;` at a ragged
edge) leaves the exited threads' slots of the tile unwritten, so the threads that stay read stale
shared memory, and a barrier not every thread of the block reaches is undefined behaviour besides
(gemini level1/14: 6% of the upper-triangular product wrong).

`exit_before_barrier(fn)` finds such an exit - an `if (cond) return;` among the kernel body's own
statements, `cond` derived from threadIdx, with a barrier in a later statement - and says whether it
can be moved after the last barrier: every global load between the exit and that barrier sits under
conditions of its own (an `if`, `?:` or `&&` inside that stretch) that read every name of the exit's
condition its index depends on - opus level3/50's `if (key_pos < hs)` guards a load indexed by the
block's batch too, which only the exit bounded: not movable - and no global store happens before the
last barrier. (Reading a name is not bounding it by the same value: the evaluation's shapes and, on a
GPU, compute-sanitizer judge the rest.) Fact `cuda_exit_before_barrier` (facts.py); recipe
`cuda_exit_after_barriers` (recipes/barrier_exit.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from debugger.lang.cuda.access import accesses, guards_within
from debugger.lang.cuda.unit import THREAD, Function, identifiers, statements, syncs_in
from debugger.source.tree import walk


@dataclass(frozen=True)
class BarrierExit:
    exit: Node           # the `if (cond) return;` statement
    condition: Node      # its condition (parenthesized)
    last_barrier: Node   # the last statement of the body holding a barrier
    movable: bool        # loads in between guarded on their own, no global store before the last barrier


def _returns_only(stmt: Node) -> bool:
    """`return;` or `{ return; }` with no value."""
    if stmt.type == "compound_statement":
        inner = statements(stmt)
        return len(inner) == 1 and _returns_only(inner[0])
    return stmt.type == "return_statement" and stmt.named_child_count == 0


def _bounded_without_exit(fn: Function, load, exit_names: set[str], lo: int, hi: int) -> bool:
    """The load's own conditions (inside the stretch) bound every name of the exit's condition its index
    depends on (`(row < M && k < K) ? a[row * K + k] : 0` for `if (row >= M) return;`)."""
    needed = fn.closure(identifiers(load.index)) & exit_names
    conditions = guards_within(load.node, lo, hi)
    if not conditions:
        return False
    bounded = set().union(*(fn.closure(identifiers(c)) for c in conditions))
    return needed <= bounded


def exit_before_barrier(fn: Function) -> BarrierExit | None:
    body = fn.body
    if body is None:
        return None
    stmts = statements(body)
    for i, stmt in enumerate(stmts):
        if stmt.type != "if_statement" or stmt.child_by_field_name("alternative") is not None:
            continue
        consequence = stmt.child_by_field_name("consequence")
        condition = stmt.child_by_field_name("condition")
        if consequence is None or condition is None or not _returns_only(consequence):
            continue
        if THREAD not in fn.closure(identifiers(condition)):
            continue
        later = [s for s in stmts[i + 1:] if syncs_in(fn, [s])]
        if not later:
            continue
        last = later[-1]
        lo, hi = stmt.end_byte, last.end_byte
        between = [a for a in accesses(fn) if lo <= a.node.start_byte and a.node.end_byte <= hi and not a.shared]
        exit_names = identifiers(condition)
        movable = not any(a.store for a in between) and \
            all(_bounded_without_exit(fn, a, exit_names, lo, hi) for a in between if not a.store)
        # a second exit or a value-returning return in between would leave threads out again
        movable = movable and not any(n.type == "return_statement" for s in stmts[i + 1:stmts.index(last) + 1]
                                      for n in walk(s))
        return BarrierExit(stmt, condition, last, movable)
    return None
