"""A row scanned chunk by chunk with CUB's block-wide scan, and no carry from one chunk to the next.

`cub::BlockScan<T, THREADS>(storage).InclusiveSum(v, out)` scans one value per thread: one chunk of
THREADS elements. A row longer than the block is scanned in a loop over its chunks - `for (int i =
threadIdx.x; i < n; i += blockDim.x)` - and each chunk must add the total of the chunks before it
(the three-argument form hands back the chunk's total). Without it every chunk restarts from zero
(qwencoder level1/89's cumsum: right on its first 1024 elements, wrong after). And a block-stride
loop ends early for the threads past the row's last element, so they skip the last chunk's scan,
a collective every thread of the block must call.

`chunked_scans(fn)` finds a sum scan of one value a thread (InclusiveSum or ExclusiveSum with no
aggregate) directly in the body of a `for` loop whose counter steps over the row, and says whether
the carry can be added without other changes (`patchable`): every global access of the loop body whose
index reads the counter sits under a condition of its own (inside the loop) that reads the counter
too, so running the last chunk with every thread stays in bounds. Fact `cuda_block_scan_no_carry`
(facts.py); recipe `cuda_block_scan_carry` (recipes/block_scan.py).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from debugger.lang.cuda.access import accesses, guards_within, inside
from debugger.lang.cuda.unit import THREAD, Function, identifiers, statements
from debugger.source.tree import text, unparen

SUMS = ("InclusiveSum", "ExclusiveSum")
# `typedef cub::BlockScan<T, ...> Name;` / `using Name = cub::BlockScan<T, ...>;`
_TYPEDEF = re.compile(r"typedef\s+(?:typename\s+)?cub::BlockScan\s*<\s*([\w:\s]+?)\s*,[^;]*>\s*(\w+)\s*;")
_USING = re.compile(r"using\s+(\w+)\s*=\s*(?:typename\s+)?cub::BlockScan\s*<\s*([\w:\s]+?)\s*,")
_DIRECT = re.compile(r"^cub::BlockScan\s*<\s*([\w:\s]+?)\s*,")


@dataclass(frozen=True)
class ChunkedScan:
    loop: Node          # the for statement over the row's chunks
    counter: str        # its counter (`i`)
    start: Node         # the counter's initial value
    condition: Node     # `i < n`
    statement: Node     # the loop-body statement holding the scan call
    call: Node          # `Scan(storage).InclusiveSum(v, out)`
    output: Node        # its second argument
    value_type: str     # the BlockScan's T
    per_thread_start: bool  # the counter starts at a thread-dependent value (a block-stride loop)
    patchable: bool


def scan_types(code: str) -> dict[str, str]:
    """Names a unit gives cub::BlockScan instantiations -> their value type."""
    out = {m.group(2): " ".join(m.group(1).split()) for m in _TYPEDEF.finditer(code)}
    out.update({m.group(1): " ".join(m.group(2).split()) for m in _USING.finditer(code)})
    return out


def _scan_call(call: Node, types: dict[str, str]) -> str | None:
    """The value type of a `Scan(storage).InclusiveSum(a, b)` / `ExclusiveSum(a, b)` call, or None."""
    fn = call.child_by_field_name("function")
    if fn is None or fn.type != "field_expression" or text(fn.child_by_field_name("field")) not in SUMS:
        return None
    args = call.child_by_field_name("arguments")
    if args is None or len(args.named_children) != 2:
        return None  # the aggregate form already has the chunk's total
    obj = unparen(fn.child_by_field_name("argument"))
    if obj.type != "call_expression":
        return None
    callee = " ".join(text(obj.child_by_field_name("function")).split())
    direct = _DIRECT.match(callee)
    return direct.group(1) if direct else types.get(callee)


def _counter(loop: Node) -> tuple[str, Node] | None:
    """(`i`, its initial value) of `for (int i = start; ...)` or `for (i = start; ...)`."""
    init = loop.child_by_field_name("initializer")
    if init is None:
        return None
    if init.type == "declaration":
        decls = [d for d in init.named_children if d.type == "init_declarator"]
        if len(decls) != 1:
            return None
        name, value = decls[0].child_by_field_name("declarator"), decls[0].child_by_field_name("value")
    elif init.type == "assignment_expression" and text(init.child_by_field_name("operator")) == "=":
        name, value = init.child_by_field_name("left"), init.child_by_field_name("right")
    else:
        return None
    if name is None or value is None or name.type != "identifier":
        return None
    return text(name), value


def _steps_over_row(loop: Node, counter: str) -> Node | None:
    """The loop's `counter < bound` condition, when its update adds to the counter."""
    cond, update = loop.child_by_field_name("condition"), loop.child_by_field_name("update")
    if cond is None or update is None:
        return None
    cond = unparen(cond)
    if cond.type != "binary_expression" or text(cond.child_by_field_name("operator")) not in ("<", "<=") or \
            text(cond.child_by_field_name("left")) != counter:
        return None
    if update.type == "assignment_expression" and text(update.child_by_field_name("operator")) == "+=" and \
            text(update.child_by_field_name("left")) == counter:
        return cond
    return None


def chunked_scans(fn: Function) -> list[ChunkedScan]:
    if fn.body is None:
        return []
    types = scan_types(text(fn.unit.root))
    out = []
    for loop in fn.nodes("for_statement"):
        body = loop.child_by_field_name("body")
        found = _counter(loop)
        if body is None or body.type != "compound_statement" or found is None:
            continue
        counter, start = found
        cond = _steps_over_row(loop, counter)
        if cond is None:
            continue
        for stmt in statements(body):
            call = unparen(stmt.named_children[0]) if stmt.type == "expression_statement" and \
                stmt.named_children else None
            value_type = _scan_call(call, types) if call is not None and call.type == "call_expression" else None
            if value_type is None:
                continue
            lo, hi = body.start_byte, body.end_byte
            indexed = [a for a in accesses(fn) if inside(a.node, body) and not a.shared and
                       counter in fn.closure(a.index_names(fn))]
            patchable = all(any(counter in fn.closure(identifiers(c)) for c in guards_within(a.node, lo, hi))
                            for a in indexed)
            out.append(ChunkedScan(loop, counter, start, cond, stmt, call,
                                   call.child_by_field_name("arguments").named_children[1], value_type,
                                   THREAD in fn.closure(identifiers(start)), patchable))
            break
    return out
