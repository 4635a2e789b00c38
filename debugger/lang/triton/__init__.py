"""Triton, behind the language interface: kernels are `@triton.jit` functions of the candidate's
Python file, launches their `kernel[grid](...)` calls (found by debugger/source/kernels.py, the finder
the host model reads too, through the recipes' syntax view, recipes/syntax.py),
static facts those the diagnosis checks first (facts.py), and the fix recipes debugger.recipes
defines itself (every recipe that no other language registered).

    from debugger.lang import get
    triton = get("triton")
    triton.uses(src); triton.kernels(src); triton.launches(src); triton.static_facts(src)
"""
from __future__ import annotations

from functools import lru_cache

from debugger.lang import Fact, Kernel, Launch
from debugger.lang.triton.facts import kernel_facts
from debugger.recipes.syntax import Source
from debugger.source.tree import call_args, line, text


@lru_cache(maxsize=32)
def source(src: str) -> Source:
    """The parsed candidate file (one per source text)."""
    return Source(src)


class Triton:
    """The Triton language: `@triton.jit` kernels launched as `kernel[grid](...)`."""

    name = "triton"

    def uses(self, src: str) -> bool:
        return "triton" in src and ("@triton.jit" in src or bool(source(src).kernels))

    def kernels(self, src: str) -> list[Kernel]:
        return [Kernel(k.name, line(k.fn), self.name) for k in source(src).kernels]

    def launches(self, src: str) -> list[Launch]:
        out = []
        for ln in source(src).launches:
            _, kw = call_args(ln.call)
            block = ", ".join(f"{k}={text(v)}" for k, v in kw.items() if "BLOCK" in k.upper())
            host = ln.host
            out.append(Launch(ln.kernel, line(ln.call), text(ln.grid), block,
                              text(host.child_by_field_name("name")) if host is not None else None, self.name))
        return out

    def static_facts(self, src: str) -> list[Fact]:
        return kernel_facts(source(src))

    def recipes(self) -> list:
        """debugger.recipes' own recipes: those no other language registered."""
        from debugger import lang
        from debugger.recipes import RECIPES

        others = {r.id for name in lang.REGISTRY if name != self.name for r in lang.get(name).recipes()}
        return [r for rid, r in RECIPES.items() if rid not in others]


LANGUAGE = Triton()
