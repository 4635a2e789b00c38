"""Grid recipes: cuda_ceil_div_grid (floor-divided block count) and cuda_grid_stride_loop (capped grid).

- cuda_ceil_div_grid, fact `cuda_floor_div_grid` (host_facts.py): every floor division of the launch's
  grid by its block size, `n / threads` (followed through `int blocks = ...`, `dim3 grid(w / T, h / T)`
  and `#define`s), becomes `(n + threads - 1) / threads`. When the launched kernel also has unguarded
  accesses, a second patch adds its bounds check (the rounded-up grid would otherwise run past the end).
- cuda_grid_stride_loop, fact `cuda_grid_capped`: the kernel's global index declaration
  `int i = blockIdx.x * blockDim.x + threadIdx.x;` becomes the head of a grid-stride loop
  `for (int i = ...; i < n; i += blockDim.x * gridDim.x) { rest of the body }`; an early
  `if (i >= n) return;` right after it is dropped (the loop condition holds it). The capped host side
  stays as it is: the loop covers what the cap leaves out.
- cuda_grid_axis_extent, fact `cuda_grid_axis_single`: a grid axis given one block (`dim3 grid(1, ...)`) that
  the kernel reads as an index bounded by a size parameter (`int b = blockIdx.x; if (b < batch_size ...)`)
  gets that parameter's launch argument as its extent, so every slice gets its blocks.
- cuda_block_stride_loop, fact `cuda_block_capped`: the block is capped (`min(n, 1024)`, `n > 1024 ? 1024 :
  n`) and the kernel's `int j = threadIdx.x;` is bounded by `if (... || j >= n) return;`: the other exits
  are kept and the rest of the body runs in `for (int j = threadIdx.x; j < n; j += blockDim.x)`.
"""
from __future__ import annotations

import re

from tree_sitter import Node

from debugger.lang.cuda.host_facts import (_capped, _floor_divisions, _leaves, _steps_over, expansion,
                                          single_block_axes)
from debugger.lang.cuda.recipes.base import (CudaRecipe, UnitEdit, line_start, size_choices, starts_line,
                                             wrap_rest)
from debugger.lang.cuda.recipes.bounds import guard_edits
from debugger.lang.cuda.unit import BLOCK, THREAD, Function, Unit, identifiers, statements, syncs_in, tested
from debugger.source.tree import text, unparen, walk

SIMPLE = ("identifier", "number_literal", "call_expression", "field_expression", "parenthesized_expression",
           "subscript_expression")


def ceil_division(div: Node) -> str:
    """`(a + b - 1) / b` for the floor division `a / b`."""
    left, right = div.child_by_field_name("left"), div.child_by_field_name("right")
    additive = left.type == "binary_expression" and text(left.child_by_field_name("operator")) in "*/%+-"
    a = text(left) if left.type in SIMPLE or additive else f"({text(left)})"
    b = text(right) if right.type in SIMPLE else f"({text(right)})"
    return f"({a} + {b} - 1) / {b}"


def drop_statement(data: bytes, stmt: Node) -> UnitEdit:
    """Delete a statement, with its line when it has the line to itself (a `//` comment after it on
    that line goes with it)."""
    end = stmt.end_byte
    eol = data.find(b"\n", end)
    tail = data[end:eol if eol >= 0 else len(data)].strip()
    if starts_line(data, stmt.start_byte) and eol >= 0 and (not tail or tail.startswith(b"//")):
        return line_start(data, stmt.start_byte), eol + 1, ""
    return stmt.start_byte, end, ""


class CudaCeilDivGrid(CudaRecipe):
    id = "cuda_ceil_div_grid"
    bug_classes = ("grid_undercount",)
    symptoms = ("never_written", "tail_block_wrong", "programs_missing", "fails_other_shapes")
    description = "CUDA: launch (n + threads - 1) / threads blocks instead of n / threads"

    def unit_fixes(self, unit: Unit, hints):
        macros = unit.macros
        for launch in unit.launches:
            grid = expansion(launch.host, launch.grid, macros)
            block = expansion(launch.host, launch.block, macros)
            divs = _floor_divisions(grid, _leaves(block, macros) if block else set(), macros)
            divs = list({(d.start_byte, d.end_byte): d for d in divs}.values())
            if not divs:
                continue
            edits: list[UnitEdit] = [(d.start_byte, d.end_byte, ceil_division(d)) for d in divs]
            what = ", ".join(text(d) for d in divs)
            yield edits, f"ceil division for the grid of {launch.kernel} ({what})"
            kernel = next((k for k in unit.kernels if k.name == launch.kernel), None)
            if kernel is not None:
                for guard, description in guard_edits(kernel, unit)[:2]:
                    yield edits + guard, f"ceil division for the grid of {launch.kernel} ({what}) and {description}"


class CudaGridAxisExtent(CudaRecipe):
    id = "cuda_grid_axis_extent"
    bug_classes = ("grid_undercount",)
    symptoms = ("never_written", "rows_unwritten", "slices_unwritten", "programs_missing")
    description = "CUDA: give a one-block grid axis the extent the kernel bounds its index by"

    def unit_fixes(self, unit: Unit, hints):
        for launch in unit.launches:
            kernel = unit.function(launch.kernel)
            if kernel is None:
                continue
            axes = single_block_axes(launch, kernel)
            if axes:
                edits = [(a.literal.start_byte, a.literal.end_byte, text(a.extent)) for a in axes]
                what = ", ".join(f"{a.axis}: {text(a.extent)} ({a.index} < {a.bound})" for a in axes)
                yield edits, f"grid of {launch.kernel} spans the bounded index axes ({what})"


def _top_index(fn: Function, accept) -> tuple[Node, str, Node] | None:
    """(declaration, name, value) of the kernel's first top-level one-declarator declaration whose value
    `accept` takes."""
    for stmt in statements(fn.body):
        if stmt.type != "declaration":
            continue
        inits = [c for c in stmt.children_by_field_name("declarator") if c.type == "init_declarator"]
        if len(inits) != 1 or len(stmt.children_by_field_name("declarator")) != 1:
            continue
        value = inits[0].child_by_field_name("value")
        if accept(value):
            return stmt, text(inits[0].child_by_field_name("declarator")), value
    return None


def global_index(fn: Function) -> tuple[Node, str, Node] | None:
    """`T i = blockIdx.x * blockDim.x + threadIdx.x` at the kernel's top level (x axis only)."""
    return _top_index(fn, lambda v: {THREAD, BLOCK} <= identifiers(v) and not re.search(r"\.\s*[yz]\b", text(v)))


def thread_index(fn: Function) -> tuple[Node, str, Node] | None:
    """`T j = threadIdx.x;` at the kernel's top level (the block's own index, no blockIdx)."""
    return _top_index(fn, lambda v: re.sub(r"\s+", "", text(v)) == "threadIdx.x")


def _exit_terms(stmt: Node) -> list[Node] | None:
    """The `||` terms of an early exit `if (a || b) return;` (None: not an early exit)."""
    if stmt.type != "if_statement" or stmt.child_by_field_name("alternative") is not None:
        return None
    cons = stmt.child_by_field_name("consequence")
    if cons is None or not (cons.type == "return_statement" or (
            cons.type == "compound_statement" and [c.type for c in statements(cons)] == ["return_statement"])):
        return None
    cond = tested(stmt.child_by_field_name("condition"))
    terms, todo = [], [cond]
    while todo:
        n = unparen(todo.pop(0))
        if n.type == "binary_expression" and text(n.child_by_field_name("operator")) == "||":
            todo = [n.child_by_field_name("left"), n.child_by_field_name("right")] + todo
        else:
            terms.append(n)
    return terms


def _early_bound(term: Node, name: str) -> str | None:
    """`n` of `i >= n` (or `n <= i`)."""
    if term.type != "binary_expression":
        return None
    op = text(term.child_by_field_name("operator"))
    left, right = text(unparen(term.child_by_field_name("left"))), text(unparen(term.child_by_field_name("right")))
    if op == ">=" and left == name:
        return right
    if op == "<=" and right == name:
        return left
    return None


def _early_exit_bound(stmt: Node, name: str) -> str | None:
    """`n` of `if (i >= n) return;` (or `if (n <= i) return;`)."""
    terms = _exit_terms(stmt)
    return _early_bound(terms[0], name) if terms and len(terms) == 1 else None


def _guard_bound(stmts: list[Node], name: str) -> str | None:
    """`n` of an `if (i < n)` among the statements (the bound the kernel itself uses)."""
    for s in stmts:
        for b in walk(s):
            if b.type == "binary_expression" and text(b.child_by_field_name("operator")) == "<" and \
                    text(unparen(b.child_by_field_name("left"))) == name:
                return text(b.child_by_field_name("right"))
    return None


def stride_loop_edits(fn: Function, unit: Unit) -> list[tuple[list[UnitEdit], str]]:
    found = global_index(fn)
    if found is None or fn.body is None:
        return []
    decl, name, value = found
    stmts = statements(fn.body)
    rest = stmts[stmts.index(decl) + 1:]
    if not rest or syncs_in(fn, rest) or len(fn.defs.get(name, [])) != 1:
        return []
    data = unit.source.text.encode()
    edits: list[UnitEdit] = []
    bound = _early_exit_bound(rest[0], name)
    if bound is not None:
        if len(rest) < 2:
            return []
        edits.append(drop_statement(data, rest[0]))
        rest = rest[1:]
    if any(n.type == "return_statement" for s in rest for n in walk(s)):
        return []  # a return inside the loop would end the thread's later iterations
    bounds = [bound] if bound else ([_guard_bound(rest, name)] if _guard_bound(rest, name) else
                                    [c[name] for c in size_choices(fn, [name])])
    type_text = text(decl.child_by_field_name("type"))
    out = []
    for b in bounds:
        head = f"for ({type_text} {name} = {text(value)}; {name} < {b}; {name} += blockDim.x * gridDim.x)"
        wrap = wrap_rest(data, rest[0], fn.body, head)
        out.append(([drop_statement(data, decl)] + edits + wrap,
                    f"grid-stride loop over {name} < {b} in {fn.name}"))
    return out


class CudaGridStrideLoop(CudaRecipe):
    id = "cuda_grid_stride_loop"
    bug_classes = ("grid_undercount",)
    symptoms = ("never_written", "programs_missing", "fails_other_shapes")
    description = "CUDA: a grid-stride loop in a kernel whose grid is capped (65535 blocks)"

    def unit_fixes(self, unit: Unit, hints):
        for kernel in capped_kernels(unit, "grid", 65535, self.forced(hints), ("gridDim",)):
            yield from stride_loop_edits(kernel, unit)


def capped_kernels(unit: Unit, extent: str, limit: int, forced: bool, steps: tuple[str, ...]):
    """The kernels whose launch caps its `extent` ("grid" or "block") at `limit` (all of them when
    `forced`) and that have no loop stepping over any of `steps`."""
    for launch in unit.launches:
        kernel = next((k for k in unit.kernels if k.name == launch.kernel), None)
        if kernel is None or any(_steps_over(kernel, b) for b in steps):
            continue
        if forced or _capped(expansion(launch.host, getattr(launch, extent), unit.macros), limit) is not None:
            yield kernel


def block_stride_edits(fn: Function, unit: Unit) -> list[tuple[list[UnitEdit], str]]:
    """`int j = threadIdx.x; ... if (... || j >= n) return; rest` -> the other exits kept, then
    `for (int j = threadIdx.x; j < n; j += blockDim.x) { rest }`."""
    found = thread_index(fn)
    if found is None or fn.body is None or len(fn.defs.get(found[1], [])) != 1:
        return []
    decl, name, value = found
    stmts = statements(fn.body)
    data = unit.source.text.encode()
    for i, stmt in enumerate(stmts[stmts.index(decl) + 1:], stmts.index(decl) + 1):
        terms = _exit_terms(stmt)
        if terms is None:
            if name in identifiers(stmt):
                return []  # used before its bound is known
            continue
        bounds = [(t, _early_bound(t, name)) for t in terms]
        mine = [(t, b) for t, b in bounds if b is not None]
        if len(mine) != 1:
            continue
        (exit_term, bound), = mine
        rest = stmts[i + 1:]
        if not rest or syncs_in(fn, rest) or any(n.type == "return_statement" for s in rest for n in walk(s)):
            return []
        if any(name in identifiers(t) for t in terms if t is not exit_term):
            return []
        others = [text(t) for t in terms if t is not exit_term]
        cond = stmt.child_by_field_name("condition")
        edits: list[UnitEdit] = [drop_statement(data, decl)]
        edits.append(drop_statement(data, stmt) if not others else
                     (cond.start_byte, cond.end_byte, f"({' || '.join(others)})"))
        type_text = text(decl.child_by_field_name("type"))
        head = f"for ({type_text} {name} = {text(value)}; {name} < {bound}; {name} += blockDim.x)"
        edits += wrap_rest(data, rest[0], fn.body, head)
        return [(edits, f"block-stride loop over {name} < {bound} in {fn.name}")]
    return []


class CudaBlockStrideLoop(CudaRecipe):
    id = "cuda_block_stride_loop"
    bug_classes = ("reduction_axis", "grid_undercount")
    symptoms = ("cuda_block_capped", "never_written", "mostly_unwritten")
    description = "CUDA: a block-stride loop in a kernel whose block is capped (1024 threads) below its extent"

    def unit_fixes(self, unit: Unit, hints):
        for kernel in capped_kernels(unit, "block", 1024, self.forced(hints), ("blockDim", "gridDim")):
            yield from block_stride_edits(kernel, unit)
