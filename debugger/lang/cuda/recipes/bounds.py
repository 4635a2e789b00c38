"""cuda_bounds_check: a kernel that loads or stores at a thread index it never compares with the size.

The fact is `cuda_unguarded_load` / `cuda_unguarded_store` (facts.py). The fix wraps the kernel body
after the index computation in `if (i < n) { ... }`, with `n` the kernel's own size parameter (for a
2-D index `if (row < M && col < N)`, the pairings of its integer parameters tried likeliest first).
Not proposed where the wrapped part holds a barrier (`__syncthreads` under a divergent `if`), or
where an access comes before the index is fully computed.
"""
from __future__ import annotations

from debugger.lang.cuda.access import accesses, covered, guards
from debugger.lang.cuda.recipes.base import CudaRecipe, UnitEdit, size_choices, top_statement, wrap_rest
from debugger.lang.cuda.unit import BUILTINS, Function, Unit, statements, syncs_in


def loose_indices(fn: Function) -> tuple[list[str], list]:
    """The thread-derived names unguarded accesses are indexed by (most basic first) and those accesses."""
    loose: list[str] = []
    sites = []
    for a in accesses(fn):
        if a.shared or (a.atomic and not a.store):
            continue
        names = {n for n in a.index_names(fn) if n not in fn.global_pointers and fn.thread_derived(n, a.node)}
        bounds = guards(fn, a.node)
        missing = [n for n in sorted(names) if not covered(fn, n, bounds)]
        if missing:
            sites.append(a)
            loose += [n for n in missing if n not in loose]
    # keep the basic ones: `j = i * 2` is bounded through i
    basic = [n for n in loose if not any(m != n and m in fn.closure({n}) for m in loose)]
    return basic, sites


def guard_edits(fn: Function, unit: Unit) -> list[tuple[list[UnitEdit], str]]:
    """Every way of wrapping `fn`'s body in a bounds check, likeliest first ([] when none applies)."""
    names, sites = loose_indices(fn)
    if not names or fn.body is None:
        return []
    body = fn.body
    stmts = statements(body)
    needed = fn.closure(set(names)) - BUILTINS
    defining = [i for i, s in enumerate(stmts) if any(
        n in needed for n in _assigned(fn, s))]
    first_access = min((stmts.index(t) for a in sites if (t := top_statement(a.node, body)) is not None),
                       default=None)
    if not defining or first_access is None or defining[-1] >= first_access or defining[-1] + 1 >= len(stmts):
        return []
    wrapped = stmts[defining[-1] + 1:]
    if syncs_in(fn, wrapped):
        return []
    data = unit.source.text.encode()
    out = []
    for choice in size_choices(fn, names):
        cond = " && ".join(f"{n} < {choice[n]}" for n in names)
        out.append((wrap_rest(data, wrapped[0], body, f"if ({cond})"),
                    f"bounds check `if ({cond})` around the accesses of {fn.name}"))
    return out


def _assigned(fn: Function, stmt) -> set[str]:
    """Names a statement declares or assigns."""
    out = set()
    for name, values in fn.defs.items():
        if any(stmt.start_byte <= v.start_byte < stmt.end_byte for v in values):
            out.add(name)
    return out


class CudaBoundsCheck(CudaRecipe):
    id = "cuda_bounds_check"
    bug_classes = ("mask_missing",)
    symptoms = ("memory_fault", "out_of_bounds_load", "tail_block_wrong")
    description = "CUDA: wrap the kernel body after the index computation in `if (idx < n)`"

    def unit_fixes(self, unit, hints):
        for fn in unit.kernels:
            yield from guard_edits(fn, unit)


def kernel_named(unit: Unit, name: str) -> Function | None:
    return next((k for k in unit.kernels if k.name == name), None)


