"""cuda_decode_on_copy: the flat index divided in place while decoding, then used as the store offset.

The fact is `cuda_index_divided_in_place` (facts.py): `w = idx % W; idx /= W; h = idx % H; idx /= H;
... y[idx] = ...` writes at the quotient, not at the thread's element. The fix decodes a copy:
`int idx_rest = idx;` goes before the first in-place division (before the statement of the enclosing
block that holds it, a decoding loop included), and from there on every decoding use of `idx` reads
the copy: the divisions themselves, `idx % C` / `idx / C` / `idx >> s` / `idx & m`, and plain reads
outside memory offsets (`int b = idx;` after the divisions is the last quotient). What stays `idx`:
a plain term of a global access's offset (`y[idx]`, `x[idx + 1]`) and comparisons (`idx < total`).
"""
from __future__ import annotations

from tree_sitter import Node

from debugger.lang.cuda.access import accesses, inside
from debugger.lang.cuda.facts import in_place_divisions as fact_divisions
from debugger.lang.cuda.recipes.base import CudaRecipe, UnitEdit, starts_line, indent_at, line_start
from debugger.lang.cuda.unit import Function, Unit
from debugger.source.tree import ancestors, text, walk

DECODING_OPS = ("/", "%", ">>", "&")
RELATIONAL = ("<", "<=", ">", ">=", "==", "!=")


def in_place_divisions(fn: Function, acc) -> list[tuple[str, Node, Node]]:
    """(name, first in-place division, the access that then uses the name as its offset), as the fact
    finds them (facts.in_place_divisions), the first division of each name only."""
    out, done = [], set()
    for name, a, use in fact_divisions(fn, acc):
        if name not in done:
            out.append((name, a, use.node))
            done.add(name)
    return out


def _enclosing_block(a: Node, b: Node) -> Node | None:
    """The innermost compound statement holding both nodes."""
    for block in ancestors(a):
        if block.type == "compound_statement" and inside(b, block):
            return block
    return None


def _keeps_original(occurrence: Node, offsets: list[Node]) -> bool:
    """This read of the index means the thread's element: an offset term or a comparison."""
    node = occurrence
    while node.parent is not None and node.parent.type == "parenthesized_expression":
        node = node.parent
    parent = node.parent
    if parent is not None and parent.type == "binary_expression":
        op = text(parent.child_by_field_name("operator"))
        if op in DECODING_OPS and parent.child_by_field_name("left") == node:
            return False
        if op in RELATIONAL:
            return True
    if parent is not None and parent.type == "assignment_expression":
        return False  # the division itself, or `idx = idx / W`
    return any(inside(occurrence, o) for o in offsets)


def fresh_name(fn: Function, base: str) -> str:
    used = {text(n) for n in walk(fn.node) if n.type == "identifier"}
    name, k = f"{base}_rest", 2
    while name in used:
        name, k = f"{base}_rest{k}", k + 1
    return name


def copy_edits(fn: Function, unit: Unit) -> list[tuple[list[UnitEdit], str]]:
    acc = accesses(fn)
    offsets = [a.index for a in acc if not a.shared]
    data = unit.source.text.encode()
    edits: list[UnitEdit] = []
    names = []
    for name, division, use in in_place_divisions(fn, acc):
        block = _enclosing_block(division, use)
        if block is None:
            continue
        top = division
        while top.parent is not None and top.parent != block:
            top = top.parent
        decl = fn.declared.get(name)
        type_text = text(decl.child_by_field_name("type")) if decl is not None else "auto"
        copy = fresh_name(fn, name)
        if starts_line(data, top.start_byte):
            at = line_start(data, top.start_byte)
            edits.append((at, at, f"{indent_at(data, top.start_byte)}{type_text} {copy} = {name};\n"))
        else:
            edits.append((top.start_byte, top.start_byte, f"{type_text} {copy} = {name}; "))
        for n in walk(block):
            if n.type == "identifier" and text(n) == name and n.start_byte >= top.start_byte \
                    and not _keeps_original(n, offsets):
                edits.append((n.start_byte, n.end_byte, copy))
        names.append(f"{name} -> {copy}")
    if not edits:
        return []
    return [(edits, f"decode on a copy of the index in {fn.name} ({', '.join(names)}): the offsets keep the "
                    f"thread's own element")]


class CudaDecodeOnCopy(CudaRecipe):
    id = "cuda_decode_on_copy"
    bug_classes = ("unwritten_output",)
    symptoms = ("never_written", "periodic_errors", "buffer_mostly_unwritten")
    description = "CUDA: decode the flat index on a copy, so the store offset stays the thread's element"

    def unit_fixes(self, unit: Unit, hints):
        for fn in unit.kernels:
            yield from copy_edits(fn, unit)
