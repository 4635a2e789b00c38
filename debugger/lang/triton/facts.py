"""Triton static facts: what a person checks first in a Triton kernel. Unmasked loads and stores,
the fill of masked lanes, accumulators allocated in half precision (tl.zeros/tl.full, tl.dot's
out_dtype), atomics, and launch grids computed with floor division. Each fact names its kernel and
the Python line; the ranking weighs its tag (debugger/diagnose)."""
from __future__ import annotations

import re

from debugger.lang import Fact
from debugger.recipes.syntax import Source
from debugger.source.tree import call_args, line, text, walk


def _fact(tag: str, node, message: str, kernel: str | None) -> Fact:
    return Fact(tag, message, line(node), "triton", kernel)


def kernel_facts(s: Source) -> list[Fact]:
    """The facts of every kernel and launch of the file; one `unparseable` fact when it does not parse."""
    if not s.ok:
        return [Fact("unparseable", "the candidate does not parse", None, "triton")]
    facts: list[Fact] = []
    for k in s.kernels:
        for call in k.calls("tl.load", "tl.store"):
            _, kw = call_args(call)
            name = s.call_name(call)
            if "mask" not in kw and "boundary_check" not in kw:
                facts.append(_fact("unmasked_load" if name == "tl.load" else "unmasked_store", call,
                                   f"{name} without a mask in {k.name}", k.name))
            other = kw.get("other")
            if other is not None:
                facts.append(_fact("other_fill", call, f"{name} fills masked lanes with other={text(other)}", k.name))
        for call in k.calls("tl.zeros", "tl.full"):
            _, kw = call_args(call)
            dt = text(kw.get("dtype"))
            if re.search(r"float16|bfloat16", dt):
                facts.append(_fact("low_precision_accumulator", call, f"accumulator allocated as {dt} in {k.name}",
                                   k.name))
        for call in k.calls("tl.atomic_add", "tl.atomic_max", "tl.atomic_min"):
            facts.append(_fact("uses_atomics", call, f"{s.call_name(call)} in {k.name}", k.name))
        for call in k.calls("tl.dot"):
            _, kw = call_args(call)
            if "out_dtype" in kw and re.search(r"float16|bfloat16", text(kw["out_dtype"])):
                facts.append(_fact("low_precision_accumulator", call, f"tl.dot accumulates in {text(kw['out_dtype'])}",
                                   k.name))
    for launch in s.launches:
        for g in launch.grid_exprs():
            for n in walk(g):
                if n.type == "binary_operator" and any(c.type == "//" for c in n.children):
                    facts.append(_fact("floor_div_grid", n, f"grid of {launch.kernel} uses floor division: {text(n)}",
                                       launch.kernel))
    return facts
