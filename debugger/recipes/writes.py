"""Write recipes: stores that several programs make to the same address (or a gathered
read-modify-write) become atomic adds into a zero-initialised output; a store indexed with the
block-local offsets where its load uses the full ones stores where the load read."""
from __future__ import annotations

from debugger.recipes.base import Recipe
from debugger.recipes.indexing import index_parts, mask_arg, pointer_bases
from debugger.recipes.syntax import LOAD, PID, Deps, Kernel, Source
from debugger.source.edits import Edit
from debugger.source.tree import (Node, call_args, enclosing, identifiers, inside, line, statement_of, text, unparen,
                                  walk)

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
            yield from self._read_modify_write(s, k)

    def _read_modify_write(self, s: Source, k: Kernel):
        """`cur = tl.load(p); tl.store(p, cur + v)` through data-dependent (gathered) addresses:
        duplicate indices lose updates; `tl.atomic_add(p, v)` does not."""
        for st in k.calls("tl.store"):
            pos, kw = call_args(st)
            ptr = pos[0] if pos else kw.get("pointer")
            value = pos[1] if len(pos) > 1 else kw.get("value")
            if ptr is None or value is None or LOAD not in k.deps.of(ptr):
                continue
            v = unparen(value)
            if v.type != "binary_operator" or text(v.child_by_field_name("operator")) != "+":
                continue
            for cur, other in ((v.child_by_field_name("left"), v.child_by_field_name("right")),
                               (v.child_by_field_name("right"), v.child_by_field_name("left"))):
                cur = unparen(cur)
                defs = k.deps.defs.get(text(cur), []) if cur.type == "identifier" else []
                loads = [c for _, rhs in defs for c in s.calls(rhs, "tl.load")]
                if len(defs) != 1 or len(loads) != 1 or \
                        text(call_args(loads[0])[0][0]).replace(" ", "") != text(ptr).replace(" ", ""):
                    continue
                edits = to_atomic(s, st) + [Edit.replace(value, text(other))]
                stmt = statement_of(defs[0][0])
                uses = [n for n in walk(k.body) if n.type == "identifier" and text(n) == text(cur)]
                if len(uses) == 2:  # its definition and this store: the load is dead afterwards
                    start = s.line_start(stmt)
                    end = s.data.find(b"\n", stmt.end_byte) + 1
                    edits.append(Edit(start, end, ""))
                yield self.patch(s, edits, f"atomic read-modify-write at line {line(st)}")
                break


class StoreOffsets(Recipe):
    id = "store_offsets"
    bug_classes = ("unwritten_output",)
    symptoms = ("never_written", "programs_missing", "one_tile_wrong", "whole_cols_wrong", "periodic_errors")
    description = "A store indexes with the block-local offsets where the matching load uses the full ones."

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            edits = []
            for st in k.calls("tl.store"):
                e = self._fix(s, k, st)
                if e:
                    edits += e
                    yield self.patch(s, e, f"store at the offsets the load reads at line {line(st)}")
            if len({e.start for e in edits}) > 1:
                yield self.patch(s, edits, f"store at the loaded offsets in {k.name}")

    @staticmethod
    def _fix(s: Source, k: Kernel, st: Node) -> list[Edit] | None:
        """Replace a store's index part P by the load's part Q when the store and a load share their
        mask and Q is computed from P (`cols = start + offs` loaded, `offs` stored)."""
        smask = mask_arg(s, st)
        sparts = index_parts(k, call_args(st)[0][0]) if call_args(st)[0] else []
        if smask is None or not sparts:
            return None
        for ld in k.calls("tl.load"):
            lmask = mask_arg(s, ld)
            if lmask is None or text(lmask) != text(smask) or ld.start_byte > st.start_byte:
                continue
            lparts = index_parts(k, call_args(ld)[0][0])
            for sp in sparts:
                for lp in lparts:
                    derived_from_sp = text(sp) in k.deps.closure(identifiers(lp)) - identifiers(lp)
                    if unparen(sp).type == "identifier" and derived_from_sp and \
                            text(lp) not in {text(p) for p in sparts}:
                        return [Edit.replace(sp, text(lp))]
        return None
