"""A running value every thread reads, updated by one thread in its own register.

A block that scans a row chunk by chunk keeps the total of the chunks before in a local -
`float carry = 0;` - and adds each chunk's total after scanning it. Written as
`if (tid == blockDim.x - 1) carry += scanned[tid];`, only the last thread's register grows: locals are
per thread, so every other thread keeps adding a carry of zero (qwencoder level1/89's sibling, level1/93's
masked cumsum: right on the first chunk of each row, short by the earlier chunks' totals after).

`one_thread_carries(fn)` finds such an update: an `if (T == E)` with no else, T thread-derived and E
not, whose only statement updates (`+=`, `-=`, `*=`, `=`) a local scalar that the kernel reads outside
the `if`, from a value that reads T only through shared memory. Every thread can then make the update
itself with T replaced by E (`carry += scanned[blockDim.x - 1];`), reading what that one thread read.
Fact `cuda_carry_in_one_thread` (facts.py); recipe `cuda_carry_in_every_thread` (recipes/carry.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from debugger.lang.cuda.unit import THREAD, Function, identifiers, statements, tested
from debugger.source.tree import text, unparen, walk

UPDATES = ("+=", "-=", "*=", "=")
THREAD_EXPRESSIONS = ("identifier", "field_expression")


@dataclass(frozen=True)
class OneThreadCarry:
    statement: Node   # the `if (T == E) ...` statement
    update: Node      # the assignment inside it
    local: str        # the register updated
    thread: str       # T
    equals: Node      # E


def _only_statement(stmt: Node) -> Node | None:
    if stmt.type == "compound_statement":
        inner = statements(stmt)
        return _only_statement(inner[0]) if len(inner) == 1 else None
    return stmt if stmt.type == "expression_statement" else None


def _thread_test(fn: Function, cond: Node) -> tuple[str, Node] | None:
    """(T, E) of `(T == E)` / `(E == T)`, T a thread-derived name, E not thread-derived."""
    cond = tested(cond)
    if cond.type != "binary_expression" or text(cond.child_by_field_name("operator")) != "==":
        return None
    left, right = unparen(cond.child_by_field_name("left")), unparen(cond.child_by_field_name("right"))
    for t, e in ((left, right), (right, left)):
        if t.type in THREAD_EXPRESSIONS and THREAD in fn.closure(identifiers(t)) and \
                THREAD not in fn.closure(identifiers(e)):
            return text(t), e
    return None


def uses_of(value: Node, thread: str) -> list[Node]:
    """The places `value` reads the thread index `thread` (a name, or `threadIdx.x`)."""
    return [n for n in walk(value) if n.type in THREAD_EXPRESSIONS and text(n) == thread]


def one_thread_carries(fn: Function) -> list[OneThreadCarry]:
    if fn.body is None:
        return []
    shared = fn.pointers_from(fn.shared)  # shared buffers and the local pointers into them
    out = []
    for stmt in fn.nodes("if_statement"):
        cond, body = stmt.child_by_field_name("condition"), stmt.child_by_field_name("consequence")
        if stmt.child_by_field_name("alternative") is not None or cond is None or body is None:
            continue
        test = _thread_test(fn, cond)
        only = _only_statement(body)
        update = unparen(only.named_children[0]) if only is not None and only.named_children else None
        if test is None or update is None or update.type != "assignment_expression" or \
                text(update.child_by_field_name("operator")) not in UPDATES:
            continue
        thread, equals = test
        target = unparen(update.child_by_field_name("left"))
        local = text(target)
        decl = fn.declared.get(local)
        if target.type != "identifier" or decl is None or local in shared or "*" in text(decl).split("=")[0] \
                or local in {p.name for p in fn.params}:
            continue
        value = update.child_by_field_name("right")
        # T only as a shared-memory index, nothing else thread-dependent in the value
        reads = uses_of(value, thread)
        if not reads or any(not _indexes_shared(n, shared) for n in reads):
            continue
        if THREAD in fn.closure(identifiers(value) - identifiers(reads[0]) - shared):
            continue
        read_elsewhere = any(n.type == "identifier" and text(n) == local and not
                             (stmt.start_byte <= n.start_byte < stmt.end_byte) and not
                             (decl.start_byte <= n.start_byte < decl.end_byte) for n in walk(fn.body))
        if read_elsewhere:
            out.append(OneThreadCarry(stmt, update, local, thread, equals))
    return out


def _indexes_shared(node: Node, shared: set[str]) -> bool:
    """`node` sits in the index of a subscript of a shared buffer."""
    child, parent = node, node.parent
    while parent is not None and parent.type not in ("subscript_expression", "expression_statement"):
        child, parent = parent, parent.parent
    if parent is None or parent.type != "subscript_expression":
        return False
    base = parent.child_by_field_name("argument")
    return base is not None and child != base and bool(identifiers(base) & shared)
