"""CUDA static facts for diagnosis: what a person reading a failing CUDA kernel checks first.

Kernel-body facts (each {tag, message, line in the Python file}); launch and host facts are in
host_facts.py. Tags are prefixed `cuda_` so they never collide with the Triton ones; the ranking
(debugger/diagnose/ranking.py) maps them onto the bug classes.

- cuda_unguarded_load / cuda_unguarded_store: a global access indexed by a thread-derived index with
  no enclosing bound (`if (i < n)`, a loop condition, `?:`, `&&`) and no early exit before it.
- cuda_index_divided_in_place: a thread-derived index divided in place while decoding
  (`idx /= W`, `idx %= H`, `idx = idx / W`) and then used as a global offset.
- cuda_shared_no_sync: a `__shared__` buffer written and then read (or read, then overwritten) by
  other threads with no `__syncthreads()` on the path between, loop iterations included.
- cuda_half_accumulator: a half/bfloat16 local accumulated in a loop.
- cuda_block_partials_race / cuda_partials_not_combined: a block reduction (shared memory or warp
  shuffles) over a slice of the data split by `blockIdx * blockDim` whose thread 0 stores without
  an atomic: to one element every block writes (the last block wins), or to out[blockIdx] that
  neither the host code nor the Python side ever combines (no second launch, no sum).
- cuda_block_smaller_than_row: a block reduction where each thread loads one element of its block's
  row and never loops: a row longer than the block is reduced in part.
- cuda_uses_atomics: atomics in the kernel (context, no class of its own).
- cuda_reads_running_stats: running_mean/running_var read (never updated) by the kernel, or handed to
  the extension from Python, with no `self.training` branch: eval-mode BatchNorm in a train-mode run.
- cuda_guard_on_fused_axis / cuda_index_fixed_at_zero (coverage.py): the kernel's own code limits it to
  the first slice (batch element) of what it was launched over.
- cuda_transposed_taps_flipped / cuda_transposed_weight_out_major (transposed.py): a gather-form
  transposed convolution read with the convolution-equivalent rewrite's conventions.
- cuda_avgpool_counts_valid (pooling.py): an average pool divides by the taps inside the input, where
  PyTorch's default divides by the whole window.
- cuda_exit_before_barrier (barrier_exit.py): a thread-dependent `if (...) return;` before a
  `__syncthreads()` the rest of the block reaches: the exited threads' share of a shared tile is never
  loaded.
- cuda_carry_in_one_thread (carry.py): a local every thread reads, updated under `if (tid == E)` only:
  the other threads' copies never change.
- cuda_block_scan_no_carry (block_scan.py): a row scanned chunk by chunk with cub::BlockScan's sum and
  no carry between the chunks: every chunk restarts from zero.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from debugger.lang import Fact
from debugger.lang.cuda.access import Access, accesses, covered, guards, inside, loops
from debugger.lang.cuda.barrier_exit import exit_before_barrier
from debugger.lang.cuda.block_scan import chunked_scans
from debugger.lang.cuda.carry import one_thread_carries
from debugger.lang.cuda.coverage import coverage_facts
from debugger.lang.cuda.pooling import pooling_facts
from debugger.lang.cuda.transposed import transposed_facts
from debugger.lang.cuda.unit import BLOCK, SYNC, THREAD, Function, call_args, identifiers
from debugger.source.tree import ancestors, text, unparen, walk

HALF = re.compile(r"\b(half2?|__half2?|__nv_bfloat16\w*|nv_bfloat16\w*|(at|c10)::(Half|BFloat16))\b")
SHUFFLE = re.compile(r"^__shfl\w*$|^__reduce_\w+_sync$")
RUNNING = re.compile(r"running_(mean|var)")
MAX_PER_KERNEL = 3


def _fact(tag: str, fn: Function, node, message: str) -> Fact:
    return Fact(tag, message, fn.unit.pyline(node), "cuda", fn.name)


def unguarded(fn: Function, acc: list[Access]) -> list[Fact]:
    out = []
    for a in acc:
        if a.shared or a.atomic and not a.store:
            continue
        names = {n for n in a.index_names(fn) if n not in fn.global_pointers and fn.thread_derived(n, a.node)}
        if not names:
            continue
        bounds = guards(fn, a.node)
        loose = sorted(n for n in names if not covered(fn, n, bounds))
        if loose:
            kind = "store" if a.store else "load"
            out.append(_fact(f"cuda_unguarded_{kind}", fn, a.node,
                        f"{kind} {text(a.node)} in {fn.name}: the thread-derived index "
                        f"{', '.join(loose)} is not bounds-checked before it"))
    return _first_per_tag(out)


def in_place_divisions(fn: Function, acc: list[Access]) -> list[tuple[str, Node, Access]]:
    """(name, in-place division, the first global access after it that uses the name as its offset) for
    each division of a thread-derived index by itself (`idx /= W`, `idx = idx % H`) that the offset then
    reads undivided-back: the cuda_index_divided_in_place shape, also what its recipe rewrites."""
    out = []
    for a in fn.nodes("assignment_expression"):
        left, op = unparen(a.child_by_field_name("left")), text(a.child_by_field_name("operator"))
        right = unparen(a.child_by_field_name("right"))
        if left.type != "identifier":
            continue
        name = text(left)
        in_place = op in ("/=", "%=", ">>=") or (
            op == "=" and right.type == "binary_expression" and text(right.child_by_field_name("operator")) in "/%"
            and text(unparen(right.child_by_field_name("left"))) == name)
        if not in_place or not fn.thread_derived(name) or _rescaled(fn, name, a):
            continue
        for use in acc:
            if use.shared or use.node.start_byte < a.end_byte or name not in identifiers(use.index):
                continue
            if _scaled(use.index, name):
                continue  # recomposed: idx * (H * W) + h * W + w
            if _reassigned(fn, name, a.end_byte, use.node.start_byte):
                continue
            out.append((name, a, use))
            break
    return out


def _rescaled(fn: Function, name: str, division) -> bool:
    """`p /= stride` after a condition tested `p % stride` (a transposed convolution's input position
    brought back to the input's scale): the quotient is the value meant, not a decoding step. (A decode's
    `w = idx % W; idx /= W;` takes the remainder as a value, not in a condition.)"""
    if text(division.child_by_field_name("operator")) != "/=":
        return False
    divisor = re.sub(r"\s+", "", text(division.child_by_field_name("right")))

    def in_condition(node) -> bool:
        for a in ancestors(node):
            if a.type in ("if_statement", "while_statement", "conditional_expression"):
                cond = a.child_by_field_name("condition")
                return cond is not None and inside(node, cond)
            if a.type in ("expression_statement", "declaration", "compound_statement"):
                return False
        return False

    return any(b.start_byte < division.start_byte and text(b.child_by_field_name("operator")) == "%"
               and text(unparen(b.child_by_field_name("left"))) == name
               and re.sub(r"\s+", "", text(b.child_by_field_name("right"))) == divisor and in_condition(b)
               for b in fn.nodes("binary_expression"))


def divided_in_place(fn: Function, acc: list[Access]) -> list[Fact]:
    out = []
    for name, a, use in in_place_divisions(fn, acc):
        kind = "store" if use.store else "load"
        out.append(_fact("cuda_index_divided_in_place", fn, use.node,
                         f"{name} is divided in place ({text(a)}, line {fn.unit.pyline(a)}) while decoding, "
                         f"then used as the {kind} offset {text(use.node)} in {fn.name}"))
    return out[:MAX_PER_KERNEL]


def _scaled(index, name: str) -> bool:
    """`name` is an operand of a multiplication in the index."""
    return any(b.type == "binary_expression" and text(b.child_by_field_name("operator")) == "*" and
               any(text(unparen(b.child_by_field_name(s))) == name for s in ("left", "right")) for b in walk(index))


def _reassigned(fn: Function, name: str, start: int, end: int) -> bool:
    for a in fn.nodes("assignment_expression"):
        if start <= a.start_byte < end and text(a.child_by_field_name("operator")) == "=" and \
                text(unparen(a.child_by_field_name("left"))) == name:
            right = a.child_by_field_name("right")
            if name not in identifiers(right):
                return True
    return False


def _statement(node):
    for a in [node, *ancestors(node)]:
        if a.type in ("expression_statement", "declaration", "return_statement") or a.type.endswith("_statement"):
            return a
    return node


@dataclass(frozen=True)
class Hazard:
    """Two accesses of one `__shared__` buffer, one a store, by different threads with no barrier between:
    `first` then `second` in source order, or, with `loop`, `second` in one iteration of that loop and
    `first` in the next."""

    first: Access
    second: Access
    loop: Node | None = None


def shared_hazards(fn: Function, acc: list[Access]) -> list[Hazard]:
    """Every hazard of the kernel's shared buffers (volatile ones left out): what cuda_shared_no_sync
    reports (its first per buffer) and what the syncthreads recipe puts a barrier into."""
    volatile = {n for n, d in fn.declared.items() if "volatile" in text(d).split("=")[0]}
    events = [a for a in acc if a.shared and a.base not in volatile]
    syncs = [c.start_byte for c in fn.calls() if _syncs(fn, c, {a.base for a in events})]
    out = []
    for i, first in enumerate(events):
        for second in events[i + 1:]:
            if first.base != second.base or not (first.store or second.store):
                continue
            if first.index_text == second.index_text and _thread_indexed(fn, first):
                continue  # each thread reads back its own element
            if _exclusive(first.node, second.node):
                continue
            s1, s2 = _statement(first.node), _statement(second.node)
            if s1 != s2 and s1.start_byte < s2.start_byte and \
                    not any(s1.start_byte < s < s2.start_byte for s in syncs):
                out.append(Hazard(first, second))
            # Across iterations: `second` in one iteration, `first` in the next.
            loop = next((lp for lp in loops(first.node, fn) if inside(second.node, lp)), None)
            body = loop.child_by_field_name("body") if loop is not None else None
            if body is not None and not any(inside_byte(s, body) and (s >= s2.end_byte or s < s1.start_byte)
                                            for s in syncs):
                out.append(Hazard(first, second, loop))
    return out


def shared_no_sync(fn: Function, acc: list[Access]) -> list[Fact]:
    out, reported = [], set()
    for h in shared_hazards(fn, acc):
        if h.first.base in reported:
            continue
        reported.add(h.first.base)
        if h.loop is None:
            out.append(_hazard(fn, h.first, h.second, "before"))
        else:
            out.append(_hazard(fn, h.second, h.first, "in the next iteration of the loop, before"))
    return out[:MAX_PER_KERNEL]


def _syncs(fn: Function, call, shared: set[str]) -> bool:
    """A barrier: __syncthreads() and kin, or a helper handed the shared buffer (`block_reduce(sdata)`)
    that syncs itself (or is not in the unit, so cannot be read)."""
    name = text(call.child_by_field_name("function")).split("::")[-1].split(".")[-1]
    if SYNC.match(name):
        return True
    if not any(identifiers(a) & shared for a in call_args(call)):
        return False
    helper = fn.unit.function(name)
    return helper is None or any(_syncs(helper, c, set()) for c in helper.calls() if helper is not fn)


def inside_byte(pos: int, node) -> bool:
    return node.start_byte <= pos < node.end_byte


def _thread_indexed(fn: Function, a: Access) -> bool:
    return any(fn.thread_derived(n) for n in identifiers(a.index))


def _exclusive(a, b) -> bool:
    """In the two branches of one if/else."""
    for p in ancestors(a):
        if p.type == "if_statement" and inside(b, p):
            cons, alt = p.child_by_field_name("consequence"), p.child_by_field_name("alternative")
            return (inside(a, cons) and inside(b, alt)) or (inside(a, alt) and inside(b, cons))
    return False


def _hazard(fn: Function, first: Access, second: Access, where: str) -> Fact:
    a, b = ("written", "read") if first.store else ("read", "overwritten")
    return _fact("cuda_shared_no_sync", fn, second.node,
                 f"__shared__ {first.base} is {a} at {text(first.node)} (line {fn.unit.pyline(first.node)}) and "
                 f"{b} at {text(second.node)} {where} with no __syncthreads() between, in {fn.name}")


def half_accumulator(fn: Function) -> list[Fact]:
    out = []
    for name, decl in fn.declared.items():
        if not HALF.search(text(decl.child_by_field_name("type"))) or name in fn.shared:
            continue
        for a in fn.nodes("assignment_expression"):
            left = unparen(a.child_by_field_name("left"))
            op = text(a.child_by_field_name("operator"))
            if text(left) != name or not loops(a, fn):
                continue
            right = a.child_by_field_name("right")
            if op in ("+=", "-=") or (op == "=" and name in identifiers(right)):
                out.append(_fact("cuda_half_accumulator", fn, decl,
                            f"{name} is declared {text(decl.child_by_field_name('type'))} and accumulated in a "
                            f"loop ({text(a)}) in {fn.name}: half precision sums lose what float keeps"))
                break
    return out[:MAX_PER_KERNEL]


def _is_reduction(fn: Function) -> bool:
    tree = any(text(lp.child_by_field_name("update")).replace(" ", "").endswith((">>=1", "/=2", "/2", ">>1"))
               for lp in fn.nodes("for_statement"))
    shuffles = any(SHUFFLE.match(text(c.child_by_field_name("function")).split("::")[-1]) for c in fn.calls())
    return shuffles or (bool(fn.shared) and tree)


def _flat_index_names(fn: Function) -> set[str]:
    """Names defined from `blockIdx * blockDim` (a global index: each block sees a slice)."""
    names = set()
    for name, values in fn.defs.items():
        for v in values:
            if any(b.type == "binary_expression" and text(b.child_by_field_name("operator")) == "*"
                   and {BLOCK, "blockDim"} <= identifiers(b) for b in walk(v)):
                names.add(name)
    return names


def _thread_zero(fn: Function, node) -> bool:
    """Inside `if (tid == 0)` (or `lane == 0`, `threadIdx.x == 0`)."""
    for a in ancestors(node):
        if a.type != "if_statement":
            continue
        cond = a.child_by_field_name("condition")
        for b in walk(cond):
            if b.type == "binary_expression" and text(b.child_by_field_name("operator")) == "==":
                sides = [unparen(b.child_by_field_name(s)) for s in ("left", "right")]
                if any(text(s) == "0" for s in sides) and any(
                        THREAD in fn.closure(identifiers(s)) for s in sides):
                    return True
    return False


def partial_stores(fn: Function, acc: list[Access], combined) -> list[tuple[str, Access, str]]:
    """(tag, thread 0's store, message) of a block reduction's result store, at most one: the
    cuda_block_partials_race / cuda_partials_not_combined / cuda_block_smaller_than_row shapes, also
    what their recipes (recipes/partials.py, recipes/rowloop.py) rewrite. `combined(fn, base)`: whether
    the launch's host side (or Python) combines what `base` receives."""
    if not _is_reduction(fn):
        return []
    atomic_targets = {a.base for a in acc if a.atomic}
    loads = [a for a in acc if not a.store and not a.shared]
    flat = _flat_index_names(fn)
    split = any(fn.closure(a.index_names(fn)) & flat for a in loads)
    out = []
    for a in acc:
        if not a.store or a.shared or a.atomic or a.base in atomic_targets or not _thread_zero(fn, a.node):
            continue
        deps = fn.closure(a.index_names(fn))
        lost = set().union(*[_block_axes(fn, x) for x in loads]) - _block_axes(fn, a) if loads else set()
        if lost and not split:  # blocks along another axis (channels of one batch row) share the element
            out.append(("cuda_block_partials_race", a,
                        f"blocks along {', '.join(sorted(lost))} reduce different parts but thread 0 of each "
                        f"stores to the same {text(a.node)} in {fn.name} without an atomic: the last one wins"))
        elif split and BLOCK not in deps:
            out.append(("cuda_block_partials_race", a,
                        f"every block's thread 0 stores its partial to {text(a.node)} in {fn.name} without an "
                        f"atomic: blocks overwrite each other and the last one wins"))
        elif split and not combined(fn, a.base):
            out.append(("cuda_partials_not_combined", a,
                        f"{fn.name} stores one partial per block to {text(a.node)} but nothing combines the "
                        f"partials (no atomic, no second pass, no sum)"))
        elif not split and not _loops_over_thread(fn, loads) and any(
                BLOCK in fn.closure(x.index_names(fn)) and THREAD in fn.closure(x.index_names(fn)) for x in loads):
            out.append(("cuda_block_smaller_than_row", a,
                        f"{fn.name} reduces one element per thread of its block's row and never loops: a row "
                        f"longer than the block is reduced in part"))
        if out:
            break
    return out


def block_partials(fn: Function, acc: list[Access], combined) -> list[Fact]:
    return [_fact(tag, fn, a.node, message) for tag, a, message in partial_stores(fn, acc, combined)]


def _block_axes(fn: Function, a: Access) -> set[str]:
    """The blockIdx axes (blockIdx.x, .y, .z) an access's index depends on."""
    names = fn.closure(a.index_names(fn))
    texts = [text(a.index)] + [text(v) for n in names for v in fn.defs.get(n, [])]
    return {m for t in texts for m in re.findall(r"blockIdx\s*\.\s*[xyz]", t.replace(" ", ""))}


def _loops_over_thread(fn: Function, loads: list[Access]) -> bool:
    """Some global load sits in a loop (each thread may read more than one element)."""
    return any(loops(a.node, fn) for a in loads)


def atomics(fn: Function, acc: list[Access]) -> list[Fact]:
    first = next((a for a in acc if a.atomic), None)
    if first is None:
        return []
    return [_fact("cuda_uses_atomics", fn, first.node, f"{fn.name} updates {first.base} with atomics")]


def running_stats(fn: Function, acc: list[Access], python: str) -> list[Fact]:
    if re.search(r"\btraining\b", python):
        return []
    names = {p.name for p in fn.params if RUNNING.search(p.name)}
    read = [a for a in acc if a.base in names and not a.store]
    written = {a.base for a in acc if a.base in names and a.store}
    if not read or written:
        return []
    return [_fact("cuda_reads_running_stats", fn, read[0].node,
                  f"{fn.name} normalises with {read[0].base}: the running statistics (eval mode), not the batch's")]


def _first_per_tag(facts: list[Fact]) -> list[Fact]:
    seen, out = {}, []
    for f in facts:
        seen[f.tag] = seen.get(f.tag, 0) + 1
        if seen[f.tag] <= MAX_PER_KERNEL:
            out.append(f)
    return out


def barrier_exit(fn: Function) -> list[Fact]:
    found = exit_before_barrier(fn)
    if found is None:
        return []
    return [_fact("cuda_exit_before_barrier", fn, found.exit,
                  f"threads leave {fn.name} at `{' '.join(text(found.exit).split())}` before a __syncthreads() the "
                  f"rest of the block reaches: their share of the shared tile is never loaded (stale values read; "
                  f"a barrier not every thread reaches is undefined)")]


def block_scan_carry(fn: Function) -> list[Fact]:
    return [_fact("cuda_block_scan_no_carry", fn, found.call,
                  f"{fn.name} scans the row chunk by chunk (`{' '.join(text(found.call).split())}` in a loop over "
                  f"`{found.counter}`) with no carry: each chunk restarts from zero instead of adding the totals "
                  f"of the chunks before it") for found in chunked_scans(fn)]


def carry_in_one_thread(fn: Function) -> list[Fact]:
    return [_fact("cuda_carry_in_one_thread", fn, found.statement,
                  f"{fn.name} updates `{found.local}` only in thread {found.thread} == {text(found.equals)} "
                  f"(`{' '.join(text(found.update).split())}`), but every thread reads its own copy: the others "
                  f"never see the update") for found in one_thread_carries(fn)]


def kernel_facts(fn: Function, combined, python: str = "") -> list[Fact]:
    """Every kernel-body fact of one `__global__` function; `python` is the candidate's Python code
    without its strings, `combined(fn, pointer)` says whether per-block partials are combined."""
    acc = accesses(fn)
    return (unguarded(fn, acc) + divided_in_place(fn, acc) + shared_no_sync(fn, acc) + half_accumulator(fn)
            + block_partials(fn, acc, combined) + atomics(fn, acc) + running_stats(fn, acc, python)
            + coverage_facts(fn) + transposed_facts(fn) + pooling_facts(fn) + barrier_exit(fn)
            + block_scan_carry(fn) + carry_in_one_thread(fn))
