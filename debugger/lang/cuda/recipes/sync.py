"""cuda_syncthreads: a barrier between the phases of a shared-memory exchange (fact `cuda_shared_no_sync`).

For every hazard facts.shared_hazards finds on a `__shared__` buffer (a store, then a read or another
store of other threads' elements, with no barrier on the path between):
- in source order (`s[tid] = v;` ... `use(s[0])`): `__syncthreads();` goes right after the statement
  that holds the first access, at the level of the innermost block holding both (after the whole loop
  when the first access is inside one);
- across the iterations of a loop (a tree reduction `for (k = blockDim.x / 2; k > 0; k >>= 1) { if
  (tid < k) s[tid] += s[tid + k]; }` with no barrier in it): `__syncthreads();` goes at the end of the
  loop body, after each step (a body that is one statement gets braces).
A barrier is only placed where every thread of the block reaches it: never under a condition (`if`,
loop bounds, `?:`) that depends on threadIdx, nor in a loop body with `break`/`continue`/`return`.
Hazards that only such a place would fix (a section run by thread 0 alone) are left as they are, and so
is a buffer every thread writes its own values to at the same slots (`scratch[c] = v` in a loop over
c): that race is inside one phase, no barrier fixes it. One patch holds every barrier the kernel needs.
"""
from __future__ import annotations

from tree_sitter import Node

from debugger.lang.cuda.access import accesses, inside
from debugger.lang.cuda.facts import _statement, shared_hazards
from debugger.lang.cuda.recipes.base import CudaRecipe, UnitEdit, indent_at, starts_line
from debugger.lang.cuda.unit import THREAD, Function, Unit, identifiers, statements
from debugger.source.tree import ancestors, text, walk

BARRIER = "__syncthreads();"
_CONTROL = ("if_statement", "while_statement", "for_statement", "do_statement", "switch_statement",
            "conditional_expression")


def divergent(fn: Function, node: Node) -> bool:
    """Some control statement around `node` (inside the kernel) branches on a thread-derived value."""
    for a in [node, *ancestors(node)]:
        if a == fn.body:
            return False
        if a.type not in _CONTROL:
            continue
        parts = [a.child_by_field_name(f) for f in ("condition", "initializer", "update")]
        if any(THREAD in fn.closure(identifiers(p)) for p in parts if p is not None):
            return True
    return False


def _block_of(a: Node, b: Node) -> Node | None:
    """The innermost compound statement holding both nodes."""
    for p in ancestors(a):
        if p.type == "compound_statement" and inside(b, p):
            return p
    return None


def _top(node: Node, block: Node) -> Node | None:
    while node is not None and node.parent != block:
        node = node.parent
    return node


def _after(data: bytes, stmt: Node) -> UnitEdit:
    """A barrier on a line of its own after `stmt` (after a trailing comment), or inline after it."""
    end = stmt.end_byte
    nl = data.find(b"\n", end)
    rest = data[end:nl if nl >= 0 else len(data)].strip()
    if nl >= 0 and starts_line(data, stmt.start_byte) and (not rest or rest.startswith(b"//")):
        return nl + 1, nl + 1, f"{indent_at(data, stmt.start_byte)}{BARRIER}\n"
    return end, end, f" {BARRIER}"


def _end_of_body(data: bytes, loop: Node) -> list[UnitEdit] | None:
    """A barrier as the last statement of the loop's body (braces added around a one-statement body)."""
    body = loop.child_by_field_name("body")
    if body is None:
        return None
    if body.type != "compound_statement":
        return [(body.start_byte, body.start_byte, "{ "), (body.end_byte, body.end_byte, f" {BARRIER} }}")]
    stmts = statements(body)
    if not stmts:
        return None
    return [_after(data, stmts[-1])]


def _exits(node: Node) -> bool:
    return any(n.type in ("break_statement", "continue_statement", "return_statement") for n in walk(node))


def shared_slots(fn: Function, acc) -> set[str]:
    """Shared buffers every thread stores its own value to at the same, thread-independent slots
    (`scratch[c] = v` in a loop over c, v from the thread's element): a race inside one phase that no
    barrier fixes (the buffer wanted to be per-thread)."""
    out = set()
    for a in acc:
        if not a.shared or not a.store or a.atomic or THREAD in fn.closure(identifiers(a.index)) or \
                divergent(fn, a.node):
            continue
        assign = a.node.parent
        value = assign.child_by_field_name("right") if assign is not None and \
            assign.type == "assignment_expression" else None
        if value is not None and THREAD in fn.closure(identifiers(value)):
            out.add(a.base)
    return out


def barrier_edits(fn: Function, unit: Unit) -> tuple[list[UnitEdit], list[str]]:
    """The barriers the kernel's shared-memory hazards need (edits, and what each separates)."""
    data = unit.source.text.encode()
    acc = accesses(fn)
    racy = shared_slots(fn, acc)
    placed: dict[int, tuple[UnitEdit, ...]] = {}  # insertion position -> edits
    what = []

    def covered(lo: int, hi: int) -> bool:
        return any(lo <= pos <= hi for pos in placed)

    # loop hazards first: a barrier closing a loop's body also separates the loop from what follows it
    for h in sorted(shared_hazards(fn, acc), key=lambda h: h.loop is None):
        if h.first.base in racy:
            continue
        s1, s2 = _statement(h.first.node), _statement(h.second.node)
        if h.loop is None:
            block = _block_of(s1, s2)
            t1 = _top(s1, block) if block is not None else None
            t2 = _top(s2, block) if block is not None else None
            if t1 is None or t2 is None or t1 == t2 or divergent(fn, block):
                continue
            if covered(s1.end_byte, s2.start_byte):
                continue
            edit = _after(data, t1)
            placed[edit[0]] = (edit,)
            what.append(f"{text(h.first.node)} and {text(h.second.node)}")
        else:
            body = h.loop.child_by_field_name("body")
            if body is None or divergent(fn, h.loop) or _exits(body):
                continue
            if any(inside_pos(pos, body) and (pos >= s2.end_byte or pos <= s1.start_byte) for pos in placed):
                continue
            edits = _end_of_body(data, h.loop)
            if edits is None:
                continue
            placed[edits[0][0]] = tuple(edits)
            what.append(f"the iterations of the loop at {text(h.second.node)}")
    return [e for es in placed.values() for e in es], what


def inside_pos(pos: int, node: Node) -> bool:
    return node.start_byte <= pos <= node.end_byte


class CudaSyncThreads(CudaRecipe):
    id = "cuda_syncthreads"
    bug_classes = ("write_race",)
    symptoms = ("cuda_shared_no_sync", "run_to_run_drift", "all_wrong")
    description = "CUDA: __syncthreads() between writing shared memory and other threads reading it"

    def unit_fixes(self, unit: Unit, hints):
        for fn in unit.kernels:
            edits, what = barrier_edits(fn, unit)
            if edits:
                yield edits, f"__syncthreads() in {fn.name} between {'; '.join(what)}"
