"""Recipes for faults only a GPU shows (its programs run at once; its offsets are 32-bit products).

- int64_offset_terms: every product in an address that multiplies a program id, an index or a stride
  is computed in int64 (cast its tensor factor), not only the program id: past 2^31 elements a
  column index times a transposed layout's column stride wraps just as the row term does.
- atomic_rmw: `cur = tl.load(p); tl.store(p, cur + v)` where programs share `p` (the pointer misses
  a program-id axis of the grid) loses updates when programs run at once: `tl.atomic_add(p, v)`.
- two_launch_carry: a kernel that reads, in the same launch, values other programs store (per-block
  totals read as a carry) is launched twice: the first launch stores every block's value, the
  second reads them all. Only when the stored values never depend on what the kernel reads back
  (the second launch recomputes the same values) and no atomics accumulate.

None of these changes what Triton's interpreter computes (it runs programs one after another on
int64 NumPy offsets), so they are proposed when the diagnosis names their class, or (atomic_rmw,
two_launch_carry) when the source shows the shape itself.
"""
from __future__ import annotations

from debugger.recipes.base import Recipe
from debugger.recipes.indexing import pointer_bases
from debugger.recipes.syntax import ARANGE, LOAD, PID, Kernel, Source
from debugger.recipes.writes import grid_axes, guarded_by_pid, to_atomic, used_axes
from debugger.source.edits import Edit
from debugger.source.tree import Node, call_args, flatten, identifiers, line, statement_of, text, unparen, walk

MEMORY_CALLS = ("tl.load", "tl.store", "tl.atomic_add", "tl.atomic_max", "tl.atomic_min", "tl.atomic_xchg",
                "tl.atomic_cas", "tl.atomic_and", "tl.atomic_or", "tl.atomic_xor")
TENSOR_MARKERS = (PID, ARANGE, LOAD)
PRIMARY = ("identifier", "call", "attribute", "subscript", "parenthesized_expression")
SCANS = ("tl.cumsum", "tl.cumprod", "tl.associative_scan")


def _pointer(call: Node) -> Node | None:
    pos, kw = call_args(call)
    return pos[0] if pos else kw.get("pointer")


def _is_int64(k: Kernel, node: Node) -> bool:
    """The expression is already int64 (its text, or the definition of a name it reads, casts so)."""
    if "int64" in text(node):
        return True
    for name in k.deps.closure(identifiers(node)):
        if any("int64" in text(rhs) for _, rhs in k.deps.defs.get(name, [])):
            return True
    return False


def offset_products(k: Kernel) -> list[list[Node]]:
    """The factors of every maximal `*` chain in an address (a memory call's pointer, or the
    definition of a name a pointer reads) that multiplies a program id, a stride, or an index by a
    runtime size argument."""
    regions = [p for c in k.calls(*MEMORY_CALLS) if (p := _pointer(c)) is not None]
    names = k.deps.closure(set().union(*(identifiers(p) for p in regions)) if regions else set())
    regions += [rhs for n in names for _, rhs in k.deps.defs.get(n, [])]
    out, seen = [], set()
    for region in regions:
        for n in walk(region):
            if n.type != "binary_operator" or text(n.child_by_field_name("operator")) != "*" or n.id in seen:
                continue
            p = n.parent
            while p is not None and p.type == "parenthesized_expression":
                p = p.parent
            if p is not None and p.type == "binary_operator" and text(p.child_by_field_name("operator")) == "*":
                continue  # not maximal: its chain is taken whole
            seen.add(n.id)
            factors = flatten(n, "*")
            stride = any(unparen(f).type == "identifier" and k.param(text(unparen(f))) is not None
                         and k.param(text(unparen(f))).stride_like for f in factors)
            pid = any(a.startswith(PID) for f in factors for a in k.deps.of(f))
            # an index times a runtime size (`cols * n_rows`: a transposed layout indexed by hand)
            index = any(a.startswith(ARANGE) for f in factors for a in k.deps.of(f))
            size = any(unparen(f).type == "identifier" and (p := k.param(text(unparen(f)))) is not None
                       and not p.pointer_like and not k.is_constexpr(p.name) for f in factors)
            if stride or pid or (index and size):
                out.append(factors)
    return out


def _cast(s: Source, node: Node) -> list[Edit]:
    node_text = f".to({s.tl}.int64)"
    if node.type in PRIMARY:
        return [Edit.insert(node.end_byte, node_text)]
    return [Edit.insert(node.start_byte, "("), Edit.insert(node.end_byte, ")" + node_text)]


class Int64OffsetTerms(Recipe):
    id = "int64_offset_terms"
    bug_classes = ("index_overflow",)
    symptoms = ("int32_offsets", "fails_other_shapes", "memory_fault")
    description = "Every address product of a program id, an index or a stride computed in int64."

    def _propose(self, s: Source, hints: dict):
        if not (self.forced(hints) or "int32_offsets" in (hints.get("symptoms") or ())):
            return
        edits, kernels = [], []
        for k in s.kernels:
            before = len(edits)
            for factors in offset_products(k):
                if any(_is_int64(k, f) for f in factors):
                    continue
                tensor = next((f for f in factors if any(a.startswith(TENSOR_MARKERS) for a in k.deps.of(f))), None)
                if tensor is not None:  # a scalar argument is a plain int on the interpreter: cast the tensor
                    edits += _cast(s, unparen(tensor) if unparen(tensor).type in PRIMARY else tensor)
            if len(edits) > before:
                kernels.append(k.name)
        yield self.patch(s, edits, f"int64 offsets for every program-id, index and stride product in "
                                   f"{', '.join(kernels)}")


def _loaded_from(s: Source, k: Kernel, rhs: Node, ptr: Node) -> bool:
    """`rhs` is a tl.load of exactly `ptr` (whitespace aside)."""
    loads = s.calls(rhs, "tl.load")
    want = text(ptr).replace(" ", "")
    return len(loads) == 1 and (_pointer(loads[0]) is not None) and \
        text(_pointer(loads[0])).replace(" ", "") == want


class AtomicReadModifyWrite(Recipe):
    id = "atomic_rmw"
    bug_classes = ("write_race",)
    symptoms = ("run_to_run_drift", "store_without_atomic", "programs_overlap", "large_error")
    description = "A plain load + store accumulation into an address programs share becomes tl.atomic_add."

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            axes = used_axes(k) | grid_axes(k)
            for st in k.calls("tl.store"):
                pos, kw = call_args(st)
                ptr, value = (pos[0] if pos else kw.get("pointer")), (pos[1] if len(pos) > 1 else kw.get("value"))
                if ptr is None or value is None or guarded_by_pid(k, st):
                    continue
                shared = bool(axes - k.deps.pid_axes(ptr)) or LOAD in k.deps.of(ptr)
                v = unparen(value)
                if not shared or v.type != "binary_operator" or text(v.child_by_field_name("operator")) != "+":
                    continue
                for cur, other in ((v.child_by_field_name("left"), v.child_by_field_name("right")),
                                   (v.child_by_field_name("right"), v.child_by_field_name("left"))):
                    cur = unparen(cur)
                    if cur.type == "call" and _loaded_from(s, k, cur, ptr):  # tl.store(p, tl.load(p) + v)
                        yield self.patch(s, to_atomic(s, st) + [Edit.replace(value, text(other))],
                                         f"atomic read-modify-write at line {line(st)}")
                        break
                    defs = k.deps.defs.get(text(cur), []) if cur.type == "identifier" else []
                    if len(defs) != 1 or not _loaded_from(s, k, defs[0][1], ptr):
                        continue
                    edits = to_atomic(s, st) + [Edit.replace(value, text(other))]
                    uses = [n for n in walk(k.body) if n.type == "identifier" and text(n) == text(cur)]
                    if len(uses) == 2:  # its definition and this store: the load goes
                        stmt = statement_of(defs[0][0])
                        end = s.data.find(b"\n", stmt.end_byte) + 1
                        edits.append(Edit(s.line_start(stmt), end, ""))
                    yield self.patch(s, edits, f"atomic read-modify-write at line {line(st)} "
                                               f"(programs share the address)")
                    break


def _bases(k: Kernel, ptr: Node) -> set[str]:
    """Pointer parameters an address is based on (its plain terms, or any pointer-named parameter it reads)."""
    return pointer_bases(k, ptr) | {n for n in k.deps.closure(identifiers(ptr))
                                    if k.param(n) is not None and k.param(n).pointer_like}


def _tainted(s: Source, k: Kernel, bases: set[str]) -> set[str]:
    """Names whose value depends on a load from one of `bases`."""
    direct = set()
    for name, defs in k.deps.defs.items():
        for _, rhs in defs:
            if any(_bases(k, p) & bases for c in s.calls(rhs, "tl.load") if (p := _pointer(c)) is not None):
                direct.add(name)
    return {n for n in k.deps.defs if k.deps.closure({n}) & direct}


def cross_program_reads(s: Source, k: Kernel) -> list[str] | None:
    """The buffers a kernel stores and reads back at other addresses (values other programs store),
    when launching it twice makes every such read see a stored value: no atomics, and no stored
    value depends on a read-back buffer. None when the kernel has no such read or is not idempotent."""
    if k.calls("tl.atomic_add", "tl.atomic_max", "tl.atomic_min", "tl.atomic_xchg", "tl.atomic_cas"):
        return None
    stores = [(st, p) for st in k.calls("tl.store") if (p := _pointer(st)) is not None]
    loads = [(ld, p) for ld in k.calls("tl.load") if (p := _pointer(ld)) is not None]
    stored = {b for _, p in stores for b in _bases(k, p)}
    shared = set()
    for _, lp in loads:
        for b in _bases(k, lp) & stored:
            own = {text(sp).replace(" ", "") for _, sp in stores if b in _bases(k, sp)}
            if text(lp).replace(" ", "") not in own:
                shared.add(b)
    if not shared:
        return None
    tainted = _tainted(s, k, shared)
    for st, p in stores:
        if not _bases(k, p) & shared:
            continue
        pos, kw = call_args(st)
        value = pos[1] if len(pos) > 1 else kw.get("value")
        if value is None or k.deps.of(value) & tainted or any(
                _bases(k, q) & shared for c in s.calls(value, "tl.load") if (q := _pointer(c)) is not None):
            return None
    return sorted(shared)


class TwoLaunchCarry(Recipe):
    id = "two_launch_carry"
    bug_classes = ("scan_semantics", "write_race")
    symptoms = ("run_to_run_drift", "whole_rows_wrong", "tail_block_wrong", "large_error")
    description = ("A kernel reading what other programs of its launch store (a carry) is launched twice: "
                   "the first stores every block's value, the second reads them all.")

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            shared = cross_program_reads(s, k)
            if not shared:
                continue
            hosts = [l.host.id if l.host is not None else None for l in k.launches()]
            if len(hosts) != len(set(hosts)):
                continue  # launched more than once by one function already
            cls = "scan_semantics" if k.calls(*SCANS) else "write_race"
            edits = []
            for l in k.launches():
                stmt = statement_of(l.call)
                if stmt.type != "expression_statement" or unparen(stmt.named_children[0]).id != l.call.id:
                    edits = []
                    break
                end = s.data.find(b"\n", stmt.end_byte)
                end = len(s.data) if end < 0 else end
                edits.append(Edit.insert(end, f"\n{s.indent_of(stmt)}{text(stmt)}  # reads what the first stored"))
            yield self.patch(s, edits, f"launch {k.name} twice: its programs read {', '.join(shared)} that other "
                                       "programs of the same launch store (per-block values, then the carry)", cls)
