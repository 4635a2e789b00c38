"""Write-race recipe: stores that several programs make to the same address become atomic adds into
a zero-initialised output."""
from __future__ import annotations

from debugger.recipes.base import Edit, Recipe
from debugger.recipes.indexing import mask_arg, pointer_bases
from debugger.recipes.syntax import (PID, Deps, Kernel, Node, Source, call_args, enclosing, inside, line,
                                     text, unparen)

ZEROED = {"torch.empty": "torch.zeros", "torch.empty_like": "torch.zeros_like"}
STORE_ONLY_KWARGS = {"cache_modifier", "eviction_policy", "boundary_check"}


def used_axes(k: Kernel) -> set[str]:
    axes = set()
    for c in k.calls("tl.program_id"):
        pos, kw = call_args(c)
        a = pos[0] if pos else kw.get("axis")
        axes.add(text(a) if a is not None else "0")
    return axes


def grid_axes(k: Kernel) -> set[str]:
    """Axes the launches' grids have (a literal tuple's length), as strings."""
    out = set()
    for l in k.launches():
        out |= {str(i) for i in range(len(l.grid_dims()))}
    return out


def guarded_by_pid(k: Kernel, node: Node) -> bool:
    """The store sits under an `if` that tests a program id (one program writes on purpose)."""
    n = node
    while (n := enclosing(n, "if_statement")) is not None and inside(n, k.fn):
        cond = n.child_by_field_name("condition")
        if any(a.startswith(PID) for a in k.deps.of(cond)):
            return True
    return False


def to_atomic(s: Source, store: Node) -> list[Edit]:
    """`tl.store(p, v, mask=m)` -> `tl.atomic_add(p, v, mask=m)` (store-only keywords dropped)."""
    edits = [Edit.replace(store.child_by_field_name("function"), f"{s.tl}.atomic_add")]
    args = store.child_by_field_name("arguments")
    for a in args.named_children:
        if a.type == "keyword_argument":
            name = text(a.child_by_field_name("name"))
            if name == "value":
                edits.append(Edit.replace(a.child_by_field_name("name"), "val"))
            elif name in STORE_ONLY_KWARGS:
                prev = a.prev_sibling
                start = prev.start_byte if prev is not None and prev.type == "," else a.start_byte
                edits.append(Edit(start, a.end_byte, ""))
    return edits


def zero_outputs(s: Source, k: Kernel, base_params: set[str]) -> list[Edit]:
    """Allocate the host tensors passed for `base_params` with zeros instead of empty."""
    edits = []
    for l in k.launches():
        bind = l.bind(k)
        host = l.host
        if host is None:
            continue
        deps = Deps(s, host)
        for p in base_params:
            arg = bind.get(p)
            if arg is None or unparen(arg).type != "identifier":
                continue
            for stmt, rhs in deps.defs.get(text(unparen(arg)), []):
                rhs = unparen(rhs)
                if stmt.start_byte > l.call.start_byte or rhs.type != "call":
                    continue
                name = s.call_name(rhs)
                f = rhs.child_by_field_name("function")
                if name in ZEROED:
                    edits.append(Edit.replace(f, ZEROED[name]))
                elif f.type == "attribute" and text(f.child_by_field_name("attribute")) == "new_empty":
                    edits.append(Edit.replace(f.child_by_field_name("attribute"), "new_zeros"))
    return edits


class AtomicAccumulate(Recipe):
    id = "atomic_accumulate"
    bug_classes = ("write_race",)
    symptoms = ("store_without_atomic", "programs_overlap", "run_to_run_drift", "constant_factor",
                "large_error")
    description = "Programs storing partial results to the same address: tl.atomic_add into a zeroed output."

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            axes = used_axes(k) | grid_axes(k)
            if not axes:
                continue
            edits, bases = [], set()
            for st in k.calls("tl.store"):
                ptr = st.child_by_field_name("arguments").named_children[0]
                missing = axes - k.deps.pid_axes(ptr)
                if not missing or guarded_by_pid(k, st):
                    continue
                mask = mask_arg(s, st)
                if mask is not None and "==" in text(mask) and k.deps.pid_axes(mask) & missing:
                    continue
                edits += to_atomic(s, st)
                bases |= pointer_bases(k, ptr)
            if edits:
                yield self.patch(s, edits + zero_outputs(s, k, bases),
                                 f"accumulate colliding stores with tl.atomic_add in {k.name} "
                                 f"(line {line(k.fn)})")
