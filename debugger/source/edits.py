"""Byte-range edits of a source: replace a node's text or insert at a point, applied together (the way
every recipe and experiment turns located sites into a new source), and the hash that says whether an
edited source is one already tried.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Iterable

from debugger.source.tree import Node


@dataclass(frozen=True)
class Edit:
    """Replace bytes [start, end) of the source with `text` (start == end inserts)."""

    start: int
    end: int
    text: str

    @classmethod
    def replace(cls, node: Node, new: str) -> "Edit":
        return cls(node.start_byte, node.end_byte, new)

    @classmethod
    def insert(cls, at: int, new: str) -> "Edit":
        return cls(at, at, new)


def apply_edits(data: bytes, edits: Iterable[Edit]) -> str | None:
    """Apply non-overlapping edits; None when two edits overlap. Identical edits count once;
    insertions at one point are concatenated in the order given."""
    merged: list[Edit] = []
    for e in dict.fromkeys(edits):
        same_point = next((i for i, m in enumerate(merged)
                           if m.start == m.end == e.start == e.end), None)
        if same_point is None:
            merged.append(e)
        else:
            merged[same_point] = Edit(e.start, e.end, merged[same_point].text + e.text)
    ordered = sorted(merged, key=lambda e: (e.start, e.end))
    for a, b in zip(ordered, ordered[1:]):
        if b.start < a.end or (a.start == b.start and a.end == b.end):
            return None
    out = data
    for e in reversed(ordered):
        out = out[:e.start] + e.text.encode() + out[e.end:]
    return out.decode()


def source_hash(src: str) -> str:
    """Hash of a source with trailing whitespace normalised (what 'already tried' compares)."""
    norm = "\n".join(line.rstrip() for line in src.strip().splitlines())
    return hashlib.sha256(norm.encode()).hexdigest()[:16]
