"""`mask_bound_numel`: a flat kernel's mask compares its offsets against a stride, not the element count.

`mask = offsets < row_stride` ("assuming 1D for simplicity") on a flat view whose stride is 1 lets
one element through: the rest of the output keeps the allocation's poison. The kernel has no element
count to compare with, so the recipe adds one: a parameter `n_elements` (before the constexprs), the
mask's bound replaced by it, and the launch passing the host's element count (a variable the host
computes with `.numel()` before the launch, else the stored tensor's `.numel()`). The launches are the
kernel's launch sites (debugger/source/kernels.py); those through a host variable that names the
kernel (`kernel = div_kernel if ... else ...; kernel[grid](*args)`) get the count as a keyword, and
every kernel that variable may name gets the parameter.
"""
from __future__ import annotations

from debugger.recipes.base import Recipe
from debugger.recipes.indexing import comparisons, is_pointer, pointer_bases, suffix_of
from debugger.recipes.syntax import Deps, Kernel, Source
from debugger.source.edits import Edit
from debugger.source.tree import Node, call_arg, call_args, enclosing, last_arg_end, line, text, unparen

PARAM = "n_elements"


def stride_bounds(k: Kernel) -> list:
    """Mask comparisons of a flat (unsuffixed) index against a stride-like parameter."""
    out = []
    for c in comparisons(k):
        bound = unparen(c.bound)
        p = k.param(text(bound)) if bound.type == "identifier" else None
        if c.op == "<" and p is not None and p.stride_like and not suffix_of(c.index)[0]:
            out.append(c)
    return out


def kernel_calls(s: Source, k: Kernel) -> list[tuple[Node, Node, list[str]]]:
    """(call, host function, kernels the launch may run) for the launch sites of `k` (source/kernels.py):
    `k[grid](...)` and launches through a host variable assigned `k` (among other kernels)."""
    return [(site.call, enclosing(site.call, "function_definition"),
             [site.kernel] if site.kernel is not None else list(site.kernels))
            for site in s.module.launch_sites if k.name in site.kernels]


def count_for(s: Source, k: Kernel, call: Node, host: Node | None) -> str | None:
    """The host's element count at the launch: a variable set from `.numel()` before it, else the
    numel of the tensor passed for the pointer the kernel stores through."""
    if host is not None:
        for name, defs in Deps(s, host).defs.items():
            for stmt, rhs in defs:
                if stmt.start_byte < call.start_byte and text(rhs).replace(" ", "").endswith(".numel()"):
                    return name
    pos, kw = call_args(call)
    stored = set()
    for st in k.calls("tl.store"):
        stored |= pointer_bases(k, call_arg(st, 0, "pointer"))
    for p, a in zip(k.params, pos):
        if p.name in stored and is_pointer(k, p.name) and a.type != "list_splat":
            return f"{text(a)}.numel()"
    return None


class MaskBoundNumel(Recipe):
    id = "mask_bound_numel"
    bug_classes = ("mask_missing",)
    symptoms = ("never_written", "prefix_written", "programs_missing", "all_wrong")
    description = "A flat mask compares offsets against a stride: compare against the element count, passed in."

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            cmps = stride_bounds(k)
            if not cmps or k.param(PARAM) is not None:
                continue
            edits: list[Edit] = []
            fixed: set[str] = set()
            for call, host, targets in kernel_calls(s, k):
                count = count_for(s, k, call, host)
                if count is None:
                    edits = []
                    break
                edits.append(Edit.insert(last_arg_end(call), f", {PARAM}={count}"))
                fixed.update(targets)
            if not edits:
                continue
            for name in sorted(fixed):
                kk = s.kernel(name)
                if kk is None or kk.param(PARAM) is not None:
                    continue
                first_cx = next((p for p in kk.params if p.constexpr), None)
                if first_cx is None:
                    edits = []
                    break
                edits.append(Edit.insert(first_cx.node.start_byte, f"{PARAM}, "))
                edits += [Edit.replace(c.bound, PARAM) for c in stride_bounds(kk)]
            if edits:
                yield self.patch(s, edits, f"the mask at line {line(cmps[0].node)} compares against "
                                           f"{text(cmps[0].bound)}, a stride: pass and compare the element count")
