"""Edits of a CUDA unit's text written back into the Python file's string literals, everything else kept.

A CUDA recipe edits the text of a `Unit` (what `load_inline` compiles), in the unit's byte offsets. Each
string literal of the Python file that the unit was built from is located in the unit's text, and
every character of the literal's content is mapped back to the bytes of the Python file: raw text one
to one; an escape sequence (`\\n` in a non-raw string) or an f-string substitution as one opaque
stretch. An edit maps when both its ends fall in raw text (or on a stretch's border) of one literal
and no substitution lies inside it; its new text is re-encoded for that literal (backslashes, quotes,
newlines of a single-line string, f-string braces). Edits that do not map make the whole patch void:
a recipe never writes a half-applied fix.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from tree_sitter import Node

from debugger.lang.cuda.sources import PythonFile
from debugger.lang.cuda.unit import Unit
from debugger.source.edits import Edit
from debugger.source.tree import text, walk

MIN_LITERAL = 12  # shorter literals ("", ", ") are too ambiguous to locate in a unit's text


@dataclass(frozen=True)
class Stretch:
    """A piece of a literal's value: chars [start, end) of the value, bytes [py_start, py_end) of the file."""

    start: int
    end: int
    py_start: int
    py_end: int
    kind: str  # raw (one to one), escape, substitution


@dataclass
class Literal:
    """One Python string literal: its value, how it is quoted, and where each piece of the value comes from."""

    node: Node
    value: str
    stretches: list[Stretch]
    raw: bool
    fstring: bool
    quote: str
    triple: bool

    def point(self, at: int) -> int | None:
        """The Python byte offset of value position `at` (a border of a piece, or inside raw text)."""
        for s in self.stretches:
            if s.start == at:
                return s.py_start
            if s.kind == "raw" and s.start < at < s.end:
                return s.py_start + len(self.value[s.start:at].encode())
        last = self.stretches[-1] if self.stretches else None
        return last.py_end if last is not None and last.end == at else None

    def substitution_inside(self, start: int, end: int) -> bool:
        return any(s.kind == "substitution" and start < s.end and s.start < end for s in self.stretches)

    def encode(self, new: str) -> str | None:
        """`new` written so that this literal's value holds it; None when the literal cannot."""
        if self.fstring:
            new = new.replace("{", "{{").replace("}", "}}")
        if self.raw:
            if "\\" in new or self.quote in new or (not self.triple and "\n" in new):
                return None
            return new
        new = new.replace("\\", "\\\\").replace(self.quote, "\\" + self.quote)
        return new if self.triple else new.replace("\n", "\\n")


def read_literal(pf: PythonFile, node: Node) -> Literal | None:
    """The value of a string literal with its pieces mapped to the file (as sources.py evaluates it)."""
    start = node.children[0] if node.children else None
    opener = text(start)
    prefix = opener.rstrip("'\"").lower()
    if "b" in prefix or not opener:
        return None
    raw, fstring = "r" in prefix, "f" in prefix
    quotes = opener[len(prefix):]
    value, stretches = "", []

    def add(piece: str, py_start: int, py_end: int, kind: str):
        nonlocal value
        stretches.append(Stretch(len(value), len(value) + len(piece), py_start, py_end, kind))
        value += piece

    data = pf.src.encode()
    for c in node.children:
        if c.type == "string_content":
            pos = c.start_byte
            for e in c.children:
                if e.start_byte > pos:
                    add(data[pos:e.start_byte].decode(errors="replace"), pos, e.start_byte, "raw")
                seg = pf._escape(e, raw, fstring)
                add(seg.text, e.start_byte, e.end_byte, "raw" if raw and e.type == "escape_sequence" else "escape")
                pos = e.end_byte
            if c.end_byte > pos:
                add(data[pos:c.end_byte].decode(errors="replace"), pos, c.end_byte, "raw")
        elif c.type == "interpolation":
            add(pf._substitution(c, 0), c.start_byte, c.end_byte, "substitution")
    return Literal(node, value, stretches, raw, fstring, quotes[:1] or '"', len(quotes) == 3)


class UnitSplice:
    """Maps edits of one unit's text (its byte offsets) to edits of the Python file."""

    def __init__(self, src: str, unit: Unit):
        self.src = src
        self.unit = unit
        self.data = unit.source.text.encode()

    @cached_property
    def placed(self) -> list[tuple[int, Literal]]:
        """(char offset in the unit's text, literal) for every literal found there once."""
        pf = PythonFile(self.src)
        body = self.unit.source.text
        out = []
        for n in walk(pf.root):
            if n.type != "string":
                continue
            lit = read_literal(pf, n)
            if lit is None or len(lit.value.strip()) < MIN_LITERAL:
                continue
            for shift, value in ((0, lit.value), (len(lit.value) - len(lit.value.lstrip()), lit.value.strip())):
                at = body.find(value)
                if at >= 0 and body.find(value, at + 1) < 0:
                    out.append((at - shift, lit))
                    break
        return out

    def _char(self, byte: int) -> int:
        return len(self.data[:byte].decode(errors="replace"))

    def edit(self, start: int, end: int, new: str) -> Edit | None:
        """The Python-file edit replacing unit bytes [start, end) with `new`; None when it does not map."""
        a, b = self._char(start), self._char(end)
        # an insertion on the border of two literals goes at the start of the next one (its line)
        order = sorted(self.placed, key=lambda p: a == b and a - p[0] == len(p[1].value))
        for offset, lit in order:
            lo, hi = a - offset, b - offset
            if lo < 0 or hi > len(lit.value) or lit.substitution_inside(lo, hi):
                continue
            py_a, py_b = lit.point(lo), lit.point(hi)
            encoded = lit.encode(new)
            if py_a is None or py_b is None or encoded is None:
                return None
            return Edit(py_a, py_b, encoded)
        return None

    def edits(self, unit_edits) -> list[Edit] | None:
        """Every (start, end, text) unit edit mapped, or None when one does not map."""
        out = []
        for start, end, new in unit_edits:
            e = self.edit(start, end, new)
            if e is None:
                return None
            out.append(e)
        return out


def error_count(units) -> int:
    """ERROR and MISSING nodes over the units' trees (a patch must not add any)."""
    return sum(1 for u in units for n in walk(u.root) if n.type == "ERROR" or n.is_missing)
