"""Kernel languages behind one small interface, and the registry that collects them.

A language says whether a candidate file uses it (`uses`), finds its kernels and their launches
(`kernels`, `launches`, lines in the candidate's Python file) and gives static facts for diagnosis
(`static_facts`: {tag, line, message, language, kernel}, the shape of `Diagnosis.static`) and its
fix recipes (`recipes`, registered into debugger.recipes when the language loads; every registered
language loads with this package, so whoever imports it proposes the languages' recipes too). Each
language is a subpackage exposing `LANGUAGE`; adding one is a new folder and a line in `REGISTRY`.
Two are registered: Triton (lang/triton: its facts; its recipes are debugger.recipes' own) and CUDA
(lang/cuda: load_inline sources, their facts and recipes).
The Python file itself is read through debugger/source (tree, edits, the host model of ModelNew).
"""
from __future__ import annotations

import importlib
from dataclasses import asdict, dataclass
from functools import cache
from typing import Protocol

# language name -> module exposing LANGUAGE
REGISTRY = {
    "triton": "debugger.lang.triton",
    "cuda": "debugger.lang.cuda",
}


@dataclass(frozen=True)
class Kernel:
    """A kernel of the candidate: its name and the Python-file line where it is defined."""

    name: str
    line: int | None
    language: str


@dataclass(frozen=True)
class Launch:
    """A launch of a kernel from host code, with its launch configuration as written."""

    kernel: str
    line: int | None
    grid: str
    block: str
    host: str | None  # the host function that launches it
    language: str


@dataclass(frozen=True)
class Fact:
    """A static fact of the kernel source: a tag the ranking weighs, why, and where (Python line)."""

    tag: str
    message: str
    line: int | None
    language: str
    kernel: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)


class Language(Protocol):
    """What each registered language provides."""

    name: str

    def uses(self, src: str) -> bool: ...

    def kernels(self, src: str) -> list[Kernel]: ...

    def launches(self, src: str) -> list[Launch]: ...

    def static_facts(self, src: str) -> list[Fact]: ...

    def recipes(self) -> list: ...


@cache
def get(name: str) -> Language:
    """The registered language `name`."""
    return importlib.import_module(REGISTRY[name]).LANGUAGE


def languages() -> list[Language]:
    """Every registered language."""
    return [get(name) for name in REGISTRY]


def used_by(src: str) -> list[Language]:
    """The registered languages the candidate file uses."""
    return [lang for lang in languages() if lang.uses(src)]


def static_facts(src: str) -> list[dict]:
    """The static facts of every registered language the candidate uses, as dicts."""
    return [f.as_dict() for lang in used_by(src) for f in lang.static_facts(src)]


def recipes() -> list:
    """Every registered language's fix recipes (already in debugger.recipes' registry)."""
    return [r for lang in languages() for r in lang.recipes()]


languages()  # load them all: each registers its recipes
