"""Mask recipes: add a missing mask to tl.load/tl.store, correct a mask's bound or the index it
tests, mask the K loop's tail."""
from __future__ import annotations

import re
from collections import defaultdict
from itertools import product

from debugger.recipes.base import Recipe
from debugger.recipes.indexing import (Comparison, comparisons, groups, IDENTITY, is_block_ptr, is_index,
                                       load_var, loop_of, loops, mask_arg, name_class, other_arg,
                                       reductions_of, signature, size_params, suffix_class, suffix_of)
from debugger.recipes.syntax import LOOP, Kernel, Source
from debugger.source.edits import Edit
from debugger.source.tree import Node, call_arg, call_args, identifiers, inside, last_arg_end, line, text, unparen


def pointer(call: Node) -> Node | None:
    return call_arg(call, 0, "pointer")


def defined_before(k: Kernel, names: set[str], at: int) -> bool:
    """Every name in `names` that the kernel assigns has an assignment before byte `at`."""
    return all(any(stmt.start_byte < at for stmt, _ in k.deps.defs[n]) for n in names if k.deps.defs.get(n))


def advanced_in_loop(k: Kernel, call: Node) -> bool:
    """The call's pointer variable is incremented inside a loop (a K-loop pointer)."""
    for name in identifiers(pointer(call)):
        for stmt, _ in k.deps.defs.get(name, []):
            if stmt.type == "augmented_assignment" and loop_of(k, stmt) is not None:
                return True
    return False


def load_fill(k: Kernel, call: Node) -> str:
    """The `other=` for a newly masked load: the identity of the first reduction it feeds."""
    var = load_var(call)
    reds = reductions_of(k, var, after=call.start_byte) if var else []
    return IDENTITY[reds[0].kind] if reds else "0.0"


# -------------------------------------------------------------------------------------------------
def group_bounds(k: Kernel, parts: list[Node], suffix: str, site: Node) -> list[str]:
    """Candidate bounds for one index group, best first."""
    bases = [text(suffix_of(p)[1]).replace(" ", "") for p in parts]
    joined = "+".join(bases)
    arange_vars = {i for p in parts for i in identifiers(p)
                   if i in k.deps.direct and LOOP not in k.deps.direct[i] and is_index(k, p)}
    out: list[str] = []
    loop = loop_of(k, site)
    if loop is not None and loop.step is not None and any(loop.var in identifiers(p) for p in parts):
        out.append(text(loop.stop))
    cmps = [c for c in comparisons(k) if c.op == "<"]
    for c in cmps:
        if text(suffix_of(c.index)[1]).replace(" ", "") == joined:
            out.append(text(c.bound))
    for c in cmps:
        if identifiers(c.index) & arange_vars and len(parts) == 1:
            out.append(text(c.bound))
    prefer = suffix_class(suffix) or (name_class(bases[0]) if len(bases) == 1 else None)
    out.extend(size_params(k, prefer))
    good = []
    for b in dict.fromkeys(out):
        if k.is_constexpr(b) or not defined_before(k, names_in(b), site.start_byte):
            continue
        good.append(b)
    return good


def names_in(t: str) -> set[str]:
    """The identifiers in a piece of expression text."""
    return set(re.findall(r"[A-Za-z_]\w*", t))


def mask_options(k: Kernel, call: Node) -> list[str]:
    """Masks for an unmasked load/store: a sibling's mask over the same indices, then masks built
    from each index group's bound."""
    ptr = pointer(call)
    sig = signature(k, ptr)
    if sig is None:
        return []
    out = []
    for other in k.calls("tl.load", "tl.store"):
        m = mask_arg(k.src, other)
        if m is None or other is call or signature(k, pointer(other)) != sig:
            continue
        if defined_before(k, identifiers(m), call.start_byte):
            out.append(text(m))
    g = groups(k, ptr)
    per_group = []
    for suffix, parts in sorted(g.items()):
        bounds = group_bounds(k, parts, suffix, call)
        if not bounds:
            return out
        lhs = " + ".join(text(p) for p in parts)
        per_group.append([f"{lhs} < {b}" for b in bounds[:3]])
    combos = sorted(product(*per_group), key=lambda c: len(c) - len({x.split(" < ")[-1] for x in c}))
    for combo in combos[:4]:
        out.append(combo[0] if len(combo) == 1 else " & ".join(f"({c})" for c in combo))
    return list(dict.fromkeys(out))


def add_mask_edit(k: Kernel, call: Node, mask: str) -> Edit | None:
    at = last_arg_end(call)
    if at is None:
        return None
    extra = f", mask={mask}"
    if k.src.call_name(call) == "tl.load" and other_arg(call) is None:
        extra += f", other={load_fill(k, call)}"
    return Edit.insert(at, extra)


class AddMask(Recipe):
    id = "add_mask"
    bug_classes = ("mask_missing",)
    symptoms = ("unmasked_load", "unmasked_store", "tail_block_wrong", "out_of_bounds_load",
                "masked_lane_store", "never_written", "fails_other_shapes", "nan_in_output")
    description = "Add the missing mask (and other=) to tl.load/tl.store, bound taken from the kernel."

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            sites = [c for c in k.calls("tl.load", "tl.store")
                     if mask_arg(s, c) is None and not is_block_ptr(k, c) and not advanced_in_loop(k, c)]
            options = {c.start_byte: mask_options(k, c) for c in sites}
            sites = [c for c in sites if options[c.start_byte]]
            if not sites:
                continue
            depth = max(len(options[c.start_byte]) for c in sites)
            for i in range(min(depth, 3)):
                edits = [add_mask_edit(k, c, options[c.start_byte][min(i, len(options[c.start_byte]) - 1)])
                         for c in sites]
                yield self.patch(s, edits, f"mask every unmasked load/store in {k.name}")
            for c in sites:
                for m in options[c.start_byte][:3]:
                    yield self.patch(s, [add_mask_edit(k, c, m)],
                                     f"mask the {s.call_name(c)} at line {line(c)} with {m}")


# -------------------------------------------------------------------------------------------------
SHAPE_ARG = re.compile(r"^(?P<t>[\w.]+)\.(shape\[(?P<a>-?\d+)\]|size\((?P<b>-?\d+)\))$")
OTHER_AXIS = {"0": ["1"], "1": ["0"], "-1": ["0", "-2"], "-2": ["-1"], "2": ["1"]}


def axis_class(axis: str) -> str | None:
    return {"0": "row", "-2": "row", "1": "col", "-1": "col"}.get(axis)


def mask_comparisons(k: Kernel) -> list[Comparison]:
    return [c for c in comparisons(k) if c.op in ("<", "<=")]


def index_class(c: Comparison) -> str | None:
    suffix, base = suffix_of(c.index)
    return suffix_class(suffix) or name_class(text(base))


class FixMaskBound(Recipe):
    id = "fix_mask_bound"
    bug_classes = ("mask_missing",)
    symptoms = ("tail_block_wrong", "never_written", "whole_cols_wrong", "whole_rows_wrong",
                "masked_lane_store", "out_of_bounds_load", "fails_other_shapes", "programs_missing")
    description = "A mask compares against the wrong bound (<= for <, a block size, the other axis)."

    def _propose(self, s: Source, hints: dict):
        near = hints.get("line") if isinstance(hints.get("line"), int) else None
        forced = self.forced(hints)
        for k in s.kernels:
            cmps = mask_comparisons(k)
            by_index = defaultdict(set)
            for c in cmps:
                by_index[text(suffix_of(c.index)[1])].add(text(c.bound))
            for c in cmps:
                yield from self._fix_op(s, c)
                yield from self._fix_bound(s, k, c, by_index, forced or (near is not None and
                                                                           abs(line(c.node) - near) <= 1))
            yield from self._fix_index(s, k)
            yield from self._segment_bound(s, k, cmps)
            yield from self._swap_pair(s, k, cmps)
            yield from self._host_args(s, k, cmps, forced or near is not None)

    def _fix_op(self, s: Source, c: Comparison):
        if c.op != "<=" or text(c.bound).replace(" ", "").endswith("-1"):
            return
        op = next(ch for ch in c.node.children if ch.type in ("<=", ">="))
        yield self.patch(s, [Edit.replace(op, "<" if op.type == "<=" else ">")],
                         f"strict comparison in the mask at line {line(c.node)}")

    def _fix_bound(self, s: Source, k: Kernel, c: Comparison, by_index, forced: bool):
        bound = text(unparen(c.bound))
        cls = index_class(c)
        p = k.param(bound)
        evidence = forced
        evidence |= p is not None and (k.is_constexpr(bound) or p.stride_like)
        evidence |= bool(cls and name_class(bound) and name_class(bound) != cls)
        evidence |= len(by_index[text(suffix_of(c.index)[1])]) > 1
        if not evidence:
            return
        for alt in size_params(k, cls):
            if alt != bound:
                yield self.patch(s, [Edit.replace(c.bound, alt)],
                                 f"compare against {alt} instead of {bound} at line {line(c.node)}")

    def _fix_index(self, s: Source, k: Kernel):
        """The mask tests part of the index: `mask=offs < n` for `ptr + start + offs` in a loop
        over `start` (or a program's block offset) tests only the first block."""
        for call in k.calls("tl.load", "tl.store"):
            mask = mask_arg(s, call)
            g = groups(k, pointer(call)) if mask is not None else None
            if not g:
                continue
            inline = unparen(mask).type == "comparison_operator"
            defs = k.deps.defs.get(text(mask), []) if unparen(mask).type == "identifier" else []
            source = mask if inline else (defs[0][1] if len(defs) == 1 else None)
            if source is None:
                continue
            for c in comparisons(k, source):
                base = text(suffix_of(c.index)[1])
                for suffix, parts in g.items():
                    texts = [text(suffix_of(p)[1]) for p in parts]
                    if base not in texts or len(parts) < 2:
                        continue
                    full = " + ".join(text(p) for p in parts)
                    if inline:
                        edit = Edit.replace(c.index, full)
                    else:
                        new = text(source)[:c.index.start_byte - source.start_byte] + full + \
                            text(source)[c.index.end_byte - source.start_byte:]
                        edit = Edit.replace(mask, f"({new})" if " & " in new or " | " in new else new)
                    yield self.patch(s, [edit], f"the mask at line {line(call)} tests the whole index {full}")

    def _segment_bound(self, s: Source, k: Kernel, cmps: list[Comparison]):
        """A segment read from an offsets array (`start = load(off + i)`, `end = load(off + i + 1)`, as in
        CSR rows and embedding bags) ends at `end`, not at the length of the whole index array."""
        loads = {}
        for name, defs in k.deps.defs.items():
            if len(defs) == 1 and defs[0][1] is not None:
                rhs = unparen(defs[0][1])
                if rhs.type == "call" and s.call_name(rhs) == "tl.load":
                    ptr = call_arg(rhs, 0, "pointer")
                    if ptr is not None:
                        loads[name] = text(ptr).replace(" ", "")
        pairs = [(a, b) for a, pa in loads.items() for b, pb in loads.items()
                 if a != b and pb in (pa + "+1", f"1+{pa}")]
        for start, end in pairs:
            for c in cmps:
                bound = text(unparen(c.bound))
                index_names = k.deps.closure(identifiers(c.index))
                if end in identifiers(c.bound) or start not in index_names | identifiers(c.bound):
                    continue
                offset = _offset_from(c.index, start)
                if offset is not None:
                    # `start + offs < end` as `offs < end - start`: the hand-written form. For sm_90 the
                    # embedding bag case then compiles to the hand fix's PTX but for one parameter, where
                    # `start + offs < end` gave 669 lines against 637 and 271 64-bit registers against 240,
                    # and timed 0.79x of the fix on an H200 (eval/ptx_diff.py, eval/RESULTS.md).
                    edits = [Edit.replace(c.index, text(offset)), Edit.replace(c.bound, f"{end} - {start}")]
                else:
                    edits = [Edit.replace(c.bound, end if start in index_names else f"({end} - {start})")]
                yield self.patch(s, edits,
                                 f"the segment {start}..{end} bounds the mask at line {line(c.node)}, not {bound}")

    def _swap_pair(self, s: Source, k: Kernel, cmps: list[Comparison]):
        """Row and column bounds exchanged within one mask expression."""
        for a in cmps:
            for b in cmps:
                if a.node.start_byte >= b.node.start_byte or text(a.bound) == text(b.bound):
                    continue
                if a.node.parent is None or b.node.parent is None:
                    continue
                ca, cb = index_class(a), index_class(b)
                wrong_a = name_class(text(a.bound)) not in (None, ca)
                wrong_b = name_class(text(b.bound)) not in (None, cb)
                same_stmt = line(a.node) == line(b.node)
                if same_stmt and (wrong_a or wrong_b):
                    yield self.patch(s, [Edit.replace(a.bound, text(b.bound)),
                                         Edit.replace(b.bound, text(a.bound))],
                                     f"swap the bounds {text(a.bound)} and {text(b.bound)}")

    def _host_args(self, s: Source, k: Kernel, cmps: list[Comparison], forced: bool):
        """The launch passes the wrong dimension for a bound (`x.shape[0]` for the column count)."""
        bound_params = {text(unparen(c.bound)): index_class(c) for c in cmps}
        for launch in k.launches():
            bind = launch.bind(k)
            for pname, cls in bound_params.items():
                arg = bind.get(pname)
                m = SHAPE_ARG.match(text(arg).replace(" ", "")) if arg is not None else None
                if m is None:
                    continue
                axis = m.group("a") or m.group("b")
                want = name_class(pname) or cls
                if not forced and (want is None or axis_class(axis) in (None, want)):
                    continue
                for alt in OTHER_AXIS.get(axis, []):
                    new = text(arg).replace(f"[{axis}]", f"[{alt}]").replace(f"({axis})", f"({alt})")
                    yield self.patch(s, [Edit.replace(arg, new)],
                                     f"pass dimension {alt} for {pname} in the {k.name} launch")


# -------------------------------------------------------------------------------------------------
def k_loop_bound(s: Source, loop) -> tuple[str, str | None] | None:
    """(K bound, block size for a count-form loop) of a K loop: `range(0, K, BK)` -> ('K', None);
    `range(tl.cdiv(K, BK))` / `range(0, K // BK)` -> ('K', 'BK')."""
    if loop.step is not None:
        if loop.start is not None and text(loop.start).strip() not in ("0",):
            return None
        return text(loop.stop), None
    stop = unparen(loop.stop)
    if stop.type == "call" and s.call_name(stop) in ("tl.cdiv", "triton.cdiv"):
        pos, _ = call_args(stop)
        return (text(pos[0]), text(pos[1])) if len(pos) == 2 else None
    if stop.type == "binary_operator" and text(stop.child_by_field_name("operator")) == "//":
        return text(stop.child_by_field_name("left")), text(stop.child_by_field_name("right"))
    return None


def k_group(k: Kernel, call: Node, loop, block: str | None):
    """(suffix, parts) of the index group of `call`'s pointer that the loop walks along K."""
    g = groups(k, pointer(call))
    if not g:
        return None
    step = text(loop.step) if loop.step is not None else block
    best = None
    for suffix, parts in g.items():
        if any(loop.var in k.deps.of(p) for p in parts):
            return suffix, parts, True
        for p in parts:
            base = text(suffix_of(p)[1])
            for _, rhs in k.deps.defs.get(base, []):
                ar = [c for c in k.src.calls(rhs, "tl.arange")]
                if ar and step and step in text(ar[0]):
                    best = (suffix, parts, False)
            if best is None and re.search(r"(^|_)(k|rk)(_|$)|offs_?k", base, re.I):
                best = (suffix, parts, False)
    return best


class KTailMask(Recipe):
    id = "k_tail_mask"
    bug_classes = ("k_loop_tail",)
    symptoms = ("unmasked_load", "out_of_bounds_load", "large_error", "all_wrong", "fails_other_shapes",
                "nan_in_output")
    description = "Mask the K loop's last partial tile with k offsets < K and other=0."

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            for loop in loops(k):
                kb = k_loop_bound(s, loop)
                if kb is None:
                    continue
                bound, block = kb
                edits = []
                stop = unparen(loop.stop)
                if stop.type == "binary_operator" and text(stop.child_by_field_name("operator")) == "//":
                    edits.append(Edit.replace(stop, f"{s.tl}.cdiv({bound}, {block})"))
                for call in k.calls("tl.load"):
                    if not inside(call, loop.body) or is_block_ptr(k, call):
                        continue
                    if not (advanced_in_loop(k, call) or loop.var in k.deps.of(pointer(call))):
                        continue
                    e = self._mask_edit(k, call, loop, bound, block)
                    if e is not None:
                        edits.extend(e)
                if edits:
                    yield self.patch(s, edits, f"mask the K tail of the loop at line {line(loop.node)} "
                                               f"in {k.name}")

    @staticmethod
    def _relative_bounds(k: Kernel, mask: Node, parts: list[Node], loop, bound: str, shift: str) -> list[Edit]:
        """With advancing pointers the k offsets stay 0..BLOCK_K: `offs_k < K` must be `< K - k`."""
        bases = {text(suffix_of(p)[1]) for p in parts}
        out = []
        for c in comparisons(k, mask):
            if c.op == "<" and text(suffix_of(c.index)[1]) in bases and text(c.bound) == bound:
                out.append(Edit.replace(c.bound, f"{bound} - {shift}"))
        return out

    def _mask_edit(self, k: Kernel, call: Node, loop, bound: str, block: str | None):
        grp = k_group(k, call, loop, block)
        if grp is None:
            return None
        suffix, parts, has_var = grp
        lhs = " + ".join(text(p) for p in parts)
        shift = loop.var if block is None else f"{loop.var} * {block}"
        kmask = f"{lhs} < {bound}" if has_var else f"{lhs} < {bound} - {shift}"
        mask = mask_arg(k.src, call)
        edits = []
        if mask is None:
            at = last_arg_end(call)
            extra = f", mask={kmask}"
            if other_arg(call) is None:
                extra += ", other=0.0"
            edits.append(Edit.insert(at, extra))
        else:
            if names_in(bound) & k.deps.of(mask) - {"tl", k.src.tl}:
                if not has_var:
                    edits += self._relative_bounds(k, mask, parts, loop, bound, shift)
                if other_arg(call) is None:
                    edits.append(Edit.insert(last_arg_end(call), ", other=0.0"))
                return edits or None
            edits.append(Edit.replace(mask, f"({text(mask)}) & ({kmask})"))
            if other_arg(call) is None:
                edits.append(Edit.insert(last_arg_end(call), ", other=0.0"))
        return edits


def _offset_from(index: Node, start: str) -> Node | None:
    """`X` when the index is written `start + X` or `X + start`; else None."""
    index = unparen(index)
    if index.type != "binary_operator" or index.named_child_count != 2:
        return None
    ops = [ch.type for ch in index.children if not ch.is_named]
    left, right = index.named_children
    if ops != ["+"]:
        return None
    if text(left) == start:
        return right
    if text(right) == start:
        return left
    return None
