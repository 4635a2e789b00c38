"""What every CUDA recipe shares: the unit-edit contract, block wrapping, and the kernel's size parameters.

A `CudaRecipe` is a `Recipe` (debugger/recipes/base.py: same Patch, same rules) whose `unit_fixes`
yields, per CUDA unit of the candidate, lists of unit edits `(start byte, end byte, new text)` with a
description. The base class writes each list back into the Python file (splice.py), drops a patch
that does not map or that adds a parse error to the CUDA source, and keeps the first `max_patches`.
A recipe whose fix also changes the Python code around the strings (a declaration) overrides `fixes`.
"""
from __future__ import annotations

import re
from typing import Iterable, Iterator

from tree_sitter import Node

from debugger.lang.cuda.splice import UnitSplice, error_count
from debugger.lang.cuda.unit import Function, Unit, int_params, statements
from debugger.recipes.base import Patch, Recipe
from debugger.recipes.syntax import Source
from debugger.source.edits import Edit
from debugger.source.tree import text

UnitEdit = tuple[int, int, str]
INDENT = "    "
SIZE_LIKE = re.compile(r"^(n|N|numel|size|total|count|num|len|length|elements)$|^(n|num|total)_|"
                       r"(numel|elements|_size|_count|_len|_total|total)$", re.I)
ROWS_LIKE = re.compile(r"^(M|rows?|h|H|height|B|batch)$|_?rows$|^(n|num)_?rows", re.I)
COLS_LIKE = re.compile(r"^(N|cols?|w|W|width|D|dim|features)$|_?cols$|^(n|num)_?cols", re.I)


class CudaRecipe(Recipe):
    """Base class of the recipes over CUDA sources: subclasses implement `unit_fixes`."""

    def unit_fixes(self, unit: Unit, hints: dict) -> Iterable[tuple[list[UnitEdit], str]]:
        raise NotImplementedError

    def fixes(self, s: Source, unit: Unit, hints: dict) -> Iterable[tuple[list[UnitEdit], list[Edit], str]]:
        """(unit edits, edits of the Python file outside the strings, description): the unit edits alone."""
        for unit_edits, description in self.unit_fixes(unit, hints):
            yield unit_edits, [], description

    def _propose(self, s: Source, hints: dict) -> Iterator[Patch | None]:
        from debugger.lang.cuda import units

        if "load_inline" not in s.src and "__global__" not in s.src:
            return
        before = units(s.src)
        errors = error_count(before)
        for unit in before:
            splice = UnitSplice(s.src, unit)
            for unit_edits, python_edits, description in self.fixes(s, unit, hints):
                edits = splice.edits(unit_edits)
                if not edits:
                    continue
                patch = self.patch(s, edits + python_edits, description)
                if patch is not None and error_count(units(patch.new_src)) <= errors:
                    yield patch


# -- text helpers over a unit's bytes ------------------------------------------------------------------
def line_start(data: bytes, pos: int) -> int:
    return data.rfind(b"\n", 0, pos) + 1


def starts_line(data: bytes, pos: int) -> bool:
    """Only whitespace between the start of its line and `pos`."""
    return not data[line_start(data, pos):pos].strip()


def indent_at(data: bytes, pos: int) -> str:
    start = line_start(data, pos)
    line = data[start:pos].decode(errors="replace")
    return line[:len(line) - len(line.lstrip())]


def top_statement(node: Node, block: Node) -> Node | None:
    """The statement of `block` that holds `node`."""
    while node is not None and node.parent is not None and node.parent != block:
        node = node.parent
    return node if node is not None and node.parent == block else None


def wrap_rest(data: bytes, first: Node, block: Node, header: str) -> list[UnitEdit]:
    """Edits putting the statements of `block` from `first` to its end inside `header { ... }`.

    When `first` starts its line, the header gets a line of its own at that indentation, the wrapped
    lines one more indentation and the closing brace a line before the block's own; otherwise both
    braces go inline."""
    close = block.end_byte - 1  # the block's `}`
    last = statements(block)[-1]
    if not starts_line(data, first.start_byte) or not starts_line(data, close):
        return [(first.start_byte, first.start_byte, header + " { "), (last.end_byte, last.end_byte, " }")]
    indent = indent_at(data, first.start_byte)
    first_line = line_start(data, first.start_byte)
    edits: list[UnitEdit] = [(first_line, first_line, f"{indent}{header} {{\n")]
    pos = first_line
    while pos < line_start(data, close):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        if data[pos:end].strip():
            edits.append((pos, pos, INDENT))
        pos = end + 1
    closing = line_start(data, close)
    edits.append((closing, closing, f"{indent}}}\n"))
    return edits


# -- sizes ---------------------------------------------------------------------------------------------
def axis_of(fn: Function, name: str) -> str | None:
    """x, y or z: the threadIdx axis a thread-derived name is built from (None: several or none)."""
    axes = set()
    for n in fn.closure({name}) | {name}:
        for v in fn.defs.get(n, []):
            axes |= set(re.findall(r"threadIdx\s*\.\s*([xyz])", text(v)))
    return axes.pop() if len(axes) == 1 else None


def size_choices(fn: Function, names: list[str], limit: int = 4) -> list[dict[str, str]]:
    """Plausible bounds for thread-derived index names: name -> integer parameter, likeliest first.

    One index: the parameter that looks like a size (n, numel, total...), else every integer
    parameter. Two: rows-like names for the y index, cols-like for x, then the other pairings."""
    params = [p for p in int_params(fn) if p not in names]
    if not params or not names or len(names) > 2:
        return []
    if len(names) == 1:
        ranked = sorted(params, key=lambda p: (not SIZE_LIKE.search(p), params.index(p)))
        return [{names[0]: p} for p in ranked][:limit]
    out = []
    for a in params:
        for b in params:
            if a != b:
                out.append({names[0]: a, names[1]: b})

    def score(choice):
        s = 0
        for name, p in choice.items():
            axis = axis_of(fn, name)
            s -= 2 * bool(axis == "y" and ROWS_LIKE.search(p) or axis == "x" and COLS_LIKE.search(p))
        return s

    return sorted(out, key=score)[:limit]
