"""cuda_block_stride_row: a row reduction whose threads load one element each (fact `cuda_block_smaller_than_row`).

One block per row, thread t loads element t of the row into the shared buffer and the block reduces
the buffer: a row longer than the block is reduced in part. The statements from the first such load
to the shared store `s[t] = e;` move into a block-stride loop that accumulates per thread, before the
block reduction, which is kept:

    float s_acc = <identity>;
    for (int i = t; i < n; i += blockDim.x) {
        <the statements before the store, t read as i>
        s_acc = fmaxf(s_acc, <e, t read as i>);      // or s_acc += <e> for a sum
    }
    s[t] = s_acc;

The combining operation (sum, max, min) is the block reduction's own (partials.reduction_op); the
identity is the fill value of the load's own guard (`t < n ? x[...] : -INFINITY`) when it has one,
else 0 / -INFINITY / INFINITY. `n` is the bound that guard compares t with, else the kernel's integer
parameters, row-length names (cols, N, dim, ...) first. Not proposed when a name set in the moved
statements is read after the store, or they hold a barrier or a return.
"""
from __future__ import annotations

import re

from tree_sitter import Node

from debugger.lang.cuda.access import accesses, loops
from debugger.lang.cuda.facts import partial_stores
from debugger.lang.cuda.recipes.base import (COLS_LIKE, INDENT, SIZE_LIKE, CudaRecipe, UnitEdit, indent_at,
                                             int_params, line_start, starts_line, top_statement)
from debugger.lang.cuda.recipes.partials import reduction_op
from debugger.lang.cuda.unit import BLOCK, THREAD, Function, Unit, identifiers, statements, syncs_in
from debugger.source.tree import text, unparen, walk

IDENTITY = {"sum": "0", "max": "-INFINITY", "min": "INFINITY"}


def _fresh(fn: Function, *names: str) -> str:
    used = {text(n) for n in walk(fn.node) if n.type == "identifier"}
    for name in names:
        if name not in used:
            return name
    k = 2
    while f"{names[-1]}{k}" in used:
        k += 1
    return f"{names[-1]}{k}"


def _column(fn: Function, loads) -> tuple[str, bool] | None:
    """(name, is the builtin threadIdx.x) of the element index the loads take from the thread alone."""
    cols = set()
    for a in loads:
        for n in a.index_names(fn):
            if n != THREAD and fn.thread_derived(n) and BLOCK not in fn.closure({n}):
                cols.add(n)
        if THREAD in identifiers(a.index):
            cols.add("threadIdx.x")
    if len(cols) != 1:
        return None
    col = cols.pop()
    return col, col == "threadIdx.x"


def _rewrite(node: Node, col: str, builtin: bool, new: str) -> str:
    """The text of `node` with each read of the element index `col` replaced by `new`."""
    data = node.text
    spans = []
    for n in walk(node):
        if builtin and n.type == "field_expression" and re.sub(r"\s", "", text(n)) == "threadIdx.x":
            spans.append((n.start_byte, n.end_byte))
        elif not builtin and n.type == "identifier" and text(n) == col:
            spans.append((n.start_byte, n.end_byte))
    out, pos = b"", node.start_byte
    for a, b in sorted(spans):
        out += data[pos - node.start_byte:a - node.start_byte] + new.encode()
        pos = b
    out += data[pos - node.start_byte:]
    return out.decode(errors="replace")


def _guard(value: Node, col: str, builtin: bool) -> tuple[str | None, str | None]:
    """(bound, fill) of a `col < bound ? load : fill` value."""
    value = unparen(value)
    if value.type != "conditional_expression":
        return None, None
    cond = unparen(value.child_by_field_name("condition"))
    if cond.type == "binary_expression" and text(cond.child_by_field_name("operator")) == "<" and \
            re.sub(r"\s", "", text(cond.child_by_field_name("left"))) == col:
        return text(cond.child_by_field_name("right")), text(value.child_by_field_name("alternative"))
    return None, None


def _bounds(fn: Function, statements_text: list[Node], col: str, builtin: bool) -> list[str]:
    for stmt in statements_text:
        for b in walk(stmt):
            if b.type == "binary_expression" and text(b.child_by_field_name("operator")) == "<" and \
                    re.sub(r"\s", "", text(b.child_by_field_name("left"))) == col:
                return [text(b.child_by_field_name("right"))]
    params = int_params(fn)
    return sorted(params, key=lambda p: (not COLS_LIKE.search(p), not SIZE_LIKE.search(p), params.index(p)))[:2]


def row_loop_edits(fn: Function, unit: Unit) -> list[tuple[list[UnitEdit], str]]:
    op = reduction_op(fn)
    if op is None or fn.body is None:
        return []
    acc = accesses(fn)
    loads = [a for a in acc if not a.store and not a.shared and not loops(a.node, fn)
             and {BLOCK, THREAD} <= fn.closure(a.index_names(fn))]
    column = _column(fn, loads)
    if not loads or column is None:
        return []
    col, builtin = column
    body = fn.body
    stmts = statements(body)
    tops = [top_statement(a.node, body) for a in loads]
    if any(t is None for t in tops):
        return []
    first = min(stmts.index(t) for t in tops)
    store = next((s for s in stmts[first:] if _shared_store(fn, s) is not None), None)
    if store is None or any(stmts.index(t) > stmts.index(store) for t in tops):
        return []
    assign = _shared_store(fn, store)
    moved = stmts[first:stmts.index(store)]
    if syncs_in(fn, moved + [store]) or any(n.type == "return_statement" for s in moved for n in walk(s)):
        return []
    later = stmts[stmts.index(store) + 1:]
    set_here = {name for s in moved for name, values in fn.defs.items()
                if any(s.start_byte <= v.start_byte < s.end_byte for v in values)}
    read_later = {text(n) for s in later for n in walk(s) if n.type == "identifier"}
    if set_here & read_later:
        return []
    shared = text(unparen(assign.child_by_field_name("left")).child_by_field_name("argument"))
    decl = fn.declared.get(shared)
    elem = text(decl.child_by_field_name("type")) if decl is not None else ""
    if elem not in ("float", "double"):
        return []
    value = assign.child_by_field_name("right")
    bound, fill = _guard(value, col, builtin)
    identity = fill if fill is not None and op != "sum" else IDENTITY[op]
    if identity == "0":
        identity = "0.0f" if elem == "float" else "0.0"
    data = unit.source.text.encode()
    if not starts_line(data, moved[0].start_byte if moved else store.start_byte):
        return []
    indent = indent_at(data, (moved or [store])[0].start_byte)
    acc_name = _fresh(fn, f"{shared}_acc", "thread_acc")
    i = _fresh(fn, "i", "col_i")
    step = _rewrite(value, col, builtin, i)
    suffix = "f" if elem == "float" else ""
    update = {"sum": f"{acc_name} += {step};", "max": f"{acc_name} = fmax{suffix}({acc_name}, {step});",
              "min": f"{acc_name} = fmin{suffix}({acc_name}, {step});"}[op]
    inner = [_rewrite(s, col, builtin, i).replace("\n", "\n" + INDENT) for s in moved] + [update]
    start = line_start(data, (moved or [store])[0].start_byte)
    out = []
    for b in ([bound] if bound else _bounds(fn, moved + [store], col, builtin)):
        lines = [f"{indent}{elem} {acc_name} = {identity};",
                 f"{indent}for (int {i} = {col}; {i} < {b}; {i} += blockDim.x) {{",
                 *[f"{indent}{INDENT}{s}" for s in inner],
                 f"{indent}}}",
                 f"{indent}{text(assign.child_by_field_name('left'))} = {acc_name};"]
        edits: list[UnitEdit] = [(start, store.end_byte, "\n".join(lines))]
        out.append((edits, f"block-stride loop over the row ({i} < {b}) in {fn.name}, accumulating per thread "
                           f"({op}) before the block reduction"))
    return out


def _shared_store(fn: Function, stmt: Node) -> Node | None:
    """The assignment `s[...] = value` of an expression statement writing a shared buffer."""
    if stmt.type != "expression_statement" or not stmt.named_children:
        return None
    a = unparen(stmt.named_children[0])
    if a.type != "assignment_expression" or text(a.child_by_field_name("operator")) != "=":
        return None
    left = unparen(a.child_by_field_name("left"))
    if left.type != "subscript_expression" or text(left.child_by_field_name("argument")) not in fn.shared:
        return None
    return a


class CudaBlockStrideRow(CudaRecipe):
    id = "cuda_block_stride_row"
    bug_classes = ("reduction_axis",)
    symptoms = ("cuda_block_smaller_than_row", "block_smaller_than_row", "whole_rows_wrong", "fails_other_shapes")
    description = "CUDA: a block-stride loop over the row, accumulating per thread before the block reduction"

    def unit_fixes(self, unit: Unit, hints):
        for fn in unit.kernels:
            if any(tag == "cuda_block_smaller_than_row" for tag, _, _ in partial_stores(fn, accesses(fn),
                                                                                        lambda f, p: True)):
                yield from row_loop_edits(fn, unit)
