"""The recipe contract: a Patch record and the Recipe base class (its edits: debugger/source/edits.py).

A recipe reads the candidate's tree, locates the sites of one bug shape, and proposes concrete
edits, each a full new source. The base class enforces the rules every recipe keeps: it proposes
nothing for a source that does not parse, never emits a source that does not parse, drops no-op and
duplicate edits, and orders its proposals by the diagnosis's hints (kernel, line) when given.
"""
from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Iterable, Protocol, runtime_checkable

from debugger.recipes.syntax import Source
from debugger.source.edits import Edit, apply_edits
from debugger.source.tree import call_args, last_arg_end, line, parses

log = logging.getLogger(__name__)

MAX_PATCHES = 8


@dataclass
class Patch:
    """One proposed repair: the whole new candidate source and where it differs."""

    recipe: str
    description: str
    new_src: str
    sites: list[int]
    bug_class: str

    def to_dict(self) -> dict:
        return asdict(self)


@lru_cache(maxsize=8)
def source_of(src: str) -> Source:
    """The parsed source, shared by the recipes that look at the same text (trees are read-only)."""
    return Source(src)


@runtime_checkable
class RecipeLike(Protocol):
    """What the registry and the backends rely on."""

    id: str
    bug_classes: tuple[str, ...]
    symptoms: tuple[str, ...]
    description: str

    def propose(self, src: str, hints: dict | None = None) -> list[Patch]: ...


class Recipe:
    """Base class: subclasses set the class attributes and implement `_propose`."""

    id: str = ""
    bug_classes: tuple[str, ...] = ()
    symptoms: tuple[str, ...] = ()
    description: str = ""
    max_patches: int = MAX_PATCHES

    def propose(self, src: str, hints: dict | None = None) -> list[Patch]:
        """Candidate repairs of `src`, best first; [] when the source does not parse.

        `hints` (all optional): "kernel" and "line" (where the diagnosis points; used to order the
        patches), "bug_class" / "bug_classes" / "recipe" (the diagnosis's verdict; unlocks
        alternatives the source alone gives no evidence for), "symptoms" (tags), "dtype" (the
        inputs' dtype, e.g. "float16").
        """
        s = source_of(src)
        if not s.ok or not parses(src):
            return []
        hints = hints or {}
        seen: set[str] = {src}
        out: list[Patch] = []
        for p in self._propose(s, hints):
            if p is None or p.new_src in seen:
                continue
            seen.add(p.new_src)
            out.append(p)
        return order_by_hints(s, out, hints)[: self.max_patches]

    def _propose(self, s: Source, hints: dict) -> Iterable[Patch | None]:
        raise NotImplementedError

    def forced(self, hints: dict) -> bool:
        """The diagnosis names this recipe or one of its bug classes ("recipe", "bug_class" or a
        "bug_classes" list in the hints): propose the speculative alternatives too, not only those
        the source itself gives evidence for."""
        classes = set(hints.get("bug_classes") or ()) | {hints.get("bug_class")}
        return hints.get("recipe") == self.id or bool(classes & set(self.bug_classes))

    def patch(self, s: Source, edits: Iterable[Edit], description: str,
              bug_class: str | None = None) -> Patch | None:
        """A Patch from edits to `s`, or None when they overlap, change nothing or break the parse."""
        edits = [e for e in edits if e is not None]
        if not edits:
            return None
        new = apply_edits(s.data, edits)
        if new is None or new == s.src or not parses(new):
            return None
        sites = sorted({s.data.count(b"\n", 0, e.start) + 1 for e in edits})
        return Patch(self.id, description, new, sites, bug_class or self.bug_classes[0])

    def __repr__(self) -> str:
        return f"<recipe {self.id}>"


def add_kernel_param(s: Source, k, name: str, value_for) -> list[Edit] | None:
    """Edits adding parameter `name` to kernel `k` (before its first constexpr parameter) and the
    argument `value_for(launch)` to every launch; None when some launch cannot take it."""
    ps = k.params
    first_cx = next((i for i, p in enumerate(ps) if p.constexpr), len(ps))
    if first_cx < len(ps):
        edits = [Edit.insert(ps[first_cx].node.start_byte, f"{name}, ")]
    elif ps:
        edits = [Edit.insert(ps[-1].node.end_byte, f", {name}")]
    else:
        return None
    for l in k.launches():
        value = value_for(l)
        if value is None:
            return None
        pos, _ = call_args(l.call)
        if len(pos) > first_cx:
            edits.append(Edit.insert(pos[first_cx].start_byte, f"{value}, "))
        elif len(pos) == first_cx and pos:
            edits.append(Edit.insert(pos[-1].end_byte, f", {value}"))
        else:
            edits.append(Edit.insert(last_arg_end(l.call), f", {name}={value}"))
    return edits


def order_by_hints(s: Source, patches: list[Patch], hints: dict) -> list[Patch]:
    """Stable sort: patches touching the hinted kernel (or its launches) first, then by distance
    of their nearest site to the hinted line. Without hints the recipe's own order stands."""
    kernel = hints.get("kernel")
    target = hints.get("line")
    if not kernel and not isinstance(target, int):
        return patches
    spans: list[tuple[int, int]] = []
    k = s.kernel(kernel) if kernel else None
    if k is not None:
        spans.append((line(k.fn), k.fn.end_point[0] + 1))
        for l in k.launches():
            spans.append((line(l.call), l.call.end_point[0] + 1))

    def key(p: Patch):
        in_kernel = any(a <= site <= b for site in p.sites for a, b in spans)
        dist = min((abs(site - target) for site in p.sites), default=0) \
            if isinstance(target, int) else 0
        return (0 if in_kernel or not spans else 1, dist)

    return sorted(patches, key=key)
