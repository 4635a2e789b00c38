"""Pointer and layout recipes: advance loop pointers, swap stride arguments, make inputs contiguous."""
from __future__ import annotations

import re
from collections import defaultdict
from itertools import combinations

from debugger.recipes.base import Recipe
from debugger.recipes.indexing import (Loop, index_parts, is_pointer, loops, name_class, suffix_class,
                                       suffix_of, terms)
from debugger.recipes.masks import pointer
from debugger.recipes.precision import launch_hosts, tensor_params
from debugger.recipes.syntax import ARANGE, Deps, Kernel, Source, body_insert_point, params
from debugger.source.edits import Edit
from debugger.source.tree import Node, call_arg, call_args, identifiers, inside, line, target_names, text, unparen, walk


def arange_size(k: Kernel, name: str) -> str | None:
    """B for a name defined as `... tl.arange(0, B) ...` (first definition)."""
    for _, rhs in k.deps.defs.get(name, []):
        for c in k.src.calls(rhs, "tl.arange"):
            pos, _ = call_args(c)
            if len(pos) == 2:
                return text(pos[1])
    return None


def loop_block(loop: Loop) -> str | None:
    """The block size a loop walks by: its step, or the divisor in `range(tl.cdiv(K, BK))`."""
    if loop.step is not None:
        return text(loop.step)
    stop = unparen(loop.stop)
    if stop.type == "call":
        pos, _ = call_args(stop)
        return text(pos[1]) if len(pos) == 2 else None
    if stop.type == "binary_operator" and text(stop.child_by_field_name("operator")) == "//":
        return text(stop.child_by_field_name("right"))
    return None


def advance_steps(k: Kernel, rhs: Node, loop: Loop) -> list[str]:
    """Per-iteration increments for a pointer defined by `rhs`: block size x stride of each index
    part, those whose block matches the loop's first."""
    block = loop_block(loop)
    ranked = []
    for t in terms(rhs):
        factors = terms(t, "*")
        idx = [f for f in factors if ARANGE in k.deps.of(f)]
        if len(idx) != 1:
            continue
        base = text(suffix_of(idx[0])[1])
        size = arange_size(k, base) if unparen(suffix_of(idx[0])[1]).type == "identifier" else None
        if size is None:
            continue
        rest = [text(f) for f in factors if f is not idx[0] and f.start_byte != idx[0].start_byte]
        step = " * ".join([size] + rest)
        ranked.append((0 if size == block else 1, step))
    return [s for _, s in sorted(ranked, key=lambda r: r[0])]


def loop_varying(k: Kernel, loop: Loop) -> set[str]:
    """The loop variable and the names the loop updates from themselves (`p += step`, `p = p + s`);
    a pointer whose dependencies include none of these is the same on every iteration."""
    names = {loop.var}
    for n in walk(loop.body):
        if n.type in ("assignment", "augmented_assignment"):
            left = n.child_by_field_name("left")
            if left is None or left.type != "identifier":
                continue
            if n.type == "augmented_assignment" or text(left) in identifiers(n.child_by_field_name("right")):
                names.add(text(left))
    return names


def stale_accesses(k: Kernel, loop: Loop, *calls: str) -> list[Node]:
    """The `calls` (tl.load, tl.store) in the loop's body whose address is the same on every iteration."""
    changed = loop_varying(k, loop)
    return [c for c in k.calls(*calls)
            if inside(c, loop.body) and not k.deps.closure(identifiers(pointer(c))) & changed]


def append_to_loop(s: Source, loop: Loop, code: str) -> Edit:
    stmts = [c for c in loop.body.named_children if c.type != "comment"]
    last = stmts[-1]
    end = s.data.find(b"\n", last.end_byte)
    end = len(s.data) if end < 0 else end
    return Edit.insert(end, f"\n{s.indent_of(stmts[0])}{code}")


def _tensor_token(k: Kernel, var: str) -> str | None:
    """'w' for a pointer variable built from `w_ptr` (the prefix its stride parameters share)."""
    for name in k.deps.closure({var}):
        m = re.fullmatch(r"(\w+?)_?ptr", name)
        if k.param(name) and m:
            return m.group(1).lower()
    return None


class AdvancePointers(Recipe):
    id = "advance_pointers"
    bug_classes = ("pointer_advance",)
    symptoms = ("loop_pointer_not_advanced", "large_error", "all_wrong", "periodic_errors",
                "intermediate_wrong")
    description = "Loop pointers/offsets not advanced by the loop step (K loops, block loops)."

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            for loop in loops(k):
                stale = stale_accesses(k, loop, "tl.load", "tl.store")
                if stale:
                    yield from self._fix_stale(s, k, loop, stale)
                yield from self._fix_amount(s, k, loop)
                yield from self._grid_stride(s, k, loop)

    def _grid_stride(self, s: Source, k: Kernel, loop: Loop):
        """A persistent grid-stride loop starting at `pid * BLOCK` (or `pid`) must step by BLOCK times
        the number of programs; stepping by BLOCK alone makes every program re-read its neighbours'
        blocks (an atomic total then counts them several times)."""
        if loop.start is None:
            return
        pids = {n for n, defs in k.deps.defs.items() for _, rhs in defs
                if rhs is not None and unparen(rhs).type == "call" and s.call_name(unparen(rhs)) == "tl.program_id"}
        start = unparen(loop.start)
        axis = None
        for n in pids:
            rhs = unparen(k.deps.defs[n][0][1])
            if n in identifiers(start):
                ax = call_arg(rhs, 0, "axis")
                axis = text(ax) if ax is not None else "0"
        if axis is None:
            return
        block = None
        if start.type == "binary_operator" and text(start.child_by_field_name("operator")) == "*":
            left, right = unparen(start.child_by_field_name("left")), unparen(start.child_by_field_name("right"))
            block = right if text(left) in pids else left if text(right) in pids else None
            if block is None:
                return
        elif not (start.type == "identifier" and text(start) in pids):
            return
        step_t = text(loop.step) if loop.step is not None else "1"
        if (block is not None and step_t != text(block)) or (block is None and step_t != "1"):
            return
        progs = [p.name for p in k.params if re.search(r"(?i)^(num|n)_?(progs|programs|ctas|blocks)$", p.name)]
        factors = [f"{s.tl}.num_programs({axis})"] + progs
        for f in factors:
            new = f"{text(block)} * {f}" if block is not None else f
            if loop.step is not None:
                edit = Edit.replace(loop.step, new)
            else:  # range(pid, n) -> range(pid, n, programs)
                edit = Edit.insert(loop.stop.end_byte, f", {new}")
            yield self.patch(s, [edit], f"grid-stride loop at line {line(loop.node)} steps over all programs ({f})")

    def _fix_stale(self, s: Source, k: Kernel, loop: Loop, stale: list[Node]):
        per_call: list[list[Edit]] = []
        seen_vars, seen_bases = set(), set()
        for c in stale:
            ptr = unparen(pointer(c))
            options: list[list[Edit]] = []
            base = self._local_base(k, ptr)
            if base is not None and base not in seen_bases:
                seen_bases.add(base)
                options += [[e] for e in self._sibling_advance(s, k, loop, base)]
            if ptr.type == "identifier" and k.deps.defs.get(text(ptr)):
                if text(ptr) in seen_vars:
                    continue
                seen_vars.add(text(ptr))
                rhs = k.deps.defs[text(ptr)][0][1]
                for step in advance_steps(k, rhs, loop)[:2]:
                    options.append([append_to_loop(s, loop, f"{text(ptr)} += {step}")])
            else:
                options += self._shift_inline(s, k, loop, c, ptr)
            if options:
                per_call.append(options)
        if not per_call:
            return
        yield self.patch(s, [e for opts in per_call for e in opts[0]],
                         f"advance the pointers of the loop at line {line(loop.node)}")
        for opts in per_call:
            for o in opts:
                yield self.patch(s, o, f"advance one pointer of the loop at line {line(loop.node)}")

    @staticmethod
    def _local_base(k: Kernel, ptr: Node) -> str | None:
        """The local pointer variable a pointer expression starts from (`w_base` in `w_base + kh * s`)."""
        for t in terms(ptr):
            t = unparen(t)
            if t.type == "identifier" and not k.param(t.text.decode()) and \
                    any(k.param(n) and is_pointer(k, n) for n in k.deps.closure({text(t)})):
                return text(t)
        return None

    @staticmethod
    def _sibling_advance(s: Source, k: Kernel, loop: Loop, base: str) -> list[Edit]:
        """`x_base += stride_xc` advances a sibling in this loop: advance `w_base` by `stride_wc`."""
        mine = _tensor_token(k, base)
        out = []
        for st in loop.body.named_children:
            aug = st.named_children[0] if st.type == "expression_statement" and st.named_child_count else None
            if aug is None or aug.type != "augmented_assignment":
                continue
            other = text(aug.child_by_field_name("left"))
            theirs = _tensor_token(k, other)
            if other == base or not mine or not theirs:
                continue
            step = text(aug.child_by_field_name("right"))
            new = re.sub(rf"\bstride_{re.escape(theirs)}(\w*)", lambda m: f"stride_{mine}{m.group(1)}", step)
            if new != step and all(k.param(n) for n in re.findall(r"\bstride_\w+", new)):
                end = s.data.find(b"\n", st.end_byte)
                out.append(Edit.insert(end if end >= 0 else len(s.data),
                                       f"\n{s.indent_of(st)}{base} += {new}"))
        return out

    def _shift_inline(self, s: Source, k: Kernel, loop: Loop, call: Node, ptr: Node) -> list[list[Edit]]:
        """Add the loop offset to the index part that walks with the loop (its arange matches the
        loop's block), inside the loop if the offsets are computed there, else in the pointer."""
        block = loop_block(loop)
        shift = loop.var if loop.step is not None else f"{loop.var} * {block}"
        out = []
        for part in index_parts(k, ptr):
            base = unparen(suffix_of(part)[1])
            if base.type != "identifier":
                continue
            size = arange_size(k, text(base))
            if size is None or (block is not None and size != block):
                continue
            defs = k.deps.defs.get(text(base), [])
            in_loop = [(st, rhs) for st, rhs in defs if inside(st, loop.body)]
            if in_loop:
                st, rhs = in_loop[0]
                out.append([Edit.replace(rhs, f"{shift} + {text(rhs)}")])
            else:
                edits = [Edit.replace(base, f"({shift} + {text(base)})")]
                mask = call_arg(call, 1 if s.call_name(call) == "tl.load" else 2, "mask")
                if mask is not None:
                    for n in walk(mask):
                        if n.type == "identifier" and text(n) == text(base):
                            edits.append(Edit.replace(n, f"({shift} + {text(base)})"))
                out.append(edits)
        return out

    def _fix_amount(self, s: Source, k: Kernel, loop: Loop):
        """`p += BLOCK` where the pointer's index part has a stride: advance by BLOCK * stride."""
        for n in walk(loop.body):
            if n.type != "augmented_assignment" or text(n.child_by_field_name("operator")) != "+=":
                continue
            var = text(n.child_by_field_name("left"))
            defs = [rhs for st, rhs in k.deps.defs.get(var, []) if st.type == "assignment"]
            if not defs:
                continue
            steps = advance_steps(k, defs[0], loop)
            cur = text(n.child_by_field_name("right")).replace(" ", "")
            if not steps or cur in {x.replace(" ", "") for x in steps}:
                continue
            if not any(p.stride_like and p.name in steps[0] for p in k.params) or \
                    any(p.stride_like and p.name in cur for p in k.params):
                continue
            for step in steps[:2]:
                yield self.patch(s, [Edit.replace(n.child_by_field_name("right"), step)],
                                 f"advance {var} by {step} at line {line(n)}")


# -------------------------------------------------------------------------------------------------
STRIDE_CALL = re.compile(r"^(?P<t>[\w.]+)\.stride\((?P<d>-?\d+)\)$")


def stride_args(launch, k: Kernel) -> dict[str, list[tuple[str, int, Node]]]:
    """Tensor text -> [(kernel param, dim, arg node)] for `T.stride(d)` launch arguments."""
    out = defaultdict(list)
    for pname, arg in launch.bind(k).items():
        m = STRIDE_CALL.match(text(arg).replace(" ", ""))
        if m:
            out[m.group("t")].append((pname, int(m.group("d")), arg))
    return out


def stride_role(k: Kernel, pname: str) -> str | None:
    """'row'/'col': the tile axis a stride parameter multiplies in the kernel's pointer math."""
    for n in walk(k.body):
        if n.type != "binary_operator" or text(n.child_by_field_name("operator")) != "*":
            continue
        factors = terms(n, "*")
        if not any(unparen(f).type == "identifier" and text(unparen(f)) == pname for f in factors):
            continue
        for f in factors:
            suf, base = suffix_of(f)
            cls = suffix_class(suf) or (name_class(text(base)) if base.type == "identifier" else None)
            if cls:
                return cls
    return None


def dim_names(s: Source, host: Node, tensor: str) -> dict[int, str]:
    """Host names for a tensor's dims: `N = w.shape[0]`, `M, K = x.shape` -> {0: 'n'} / {0: 'm', 1: 'k'}."""
    out: dict[int, str] = {}
    for n in walk(host):
        if n.type != "assignment":
            continue
        rhs = text(n.child_by_field_name("right")).replace(" ", "")
        targets = target_names(n.child_by_field_name("left"))
        m = re.fullmatch(rf"{re.escape(tensor)}\.(?:shape\[(-?\d+)\]|size\((-?\d+)\))", rhs)
        if m and len(targets) == 1:
            out[int(m.group(1) or m.group(2))] = targets[0].lower()
        elif rhs in (f"{tensor}.shape", f"{tensor}.size()"):
            out.update({i: t.lower() for i, t in enumerate(targets)})
    return out


def _mask_bound_of(k: Kernel, pname: str) -> str | None:
    """The size parameter that masks the index a stride parameter multiplies (`offs_k[:, None] *
    stride_wk` with `offs_k[:, None] < K` -> 'K')."""
    from debugger.recipes.indexing import comparisons

    bases = set()
    for n in walk(k.body):
        if n.type != "binary_operator" or text(n.child_by_field_name("operator")) != "*":
            continue
        factors = terms(n, "*")
        if len(factors) != 2 or not any(unparen(f).type == "identifier" and text(unparen(f)) == pname
                                        for f in factors):
            continue
        for f in factors:
            if text(unparen(f)) != pname:
                bases.add(text(suffix_of(f)[1]))
    for c in comparisons(k):
        if c.op in ("<", "<=") and text(suffix_of(c.index)[1]) in bases and unparen(c.bound).type == "identifier" \
                and k.param(text(c.bound)):
            return text(c.bound)
    return None


def _axis_letters(pname: str) -> str | None:
    """'k' for stride_wk / stride_w_k / stride_xk (the axis a stride parameter names)."""
    last = pname.lower().split("_")[-1]
    if last == "stride" or not last:
        return None
    return last[-1] if len(last) <= 3 else None


class SwapStrides(Recipe):
    id = "swap_strides"
    bug_classes = ("stride_layout",)
    symptoms = ("transposed", "fails_noncontiguous", "hardcoded_stride", "all_wrong", "periodic_errors")
    description = "Stride arguments in the wrong order (stride(0)/stride(1) swapped), or a shape passed as a stride."

    def _propose(self, s: Source, hints: dict):
        forced = self.forced(hints) or bool({"transposed", "fails_noncontiguous"} & set(hints.get("symptoms", ())))
        for k in s.kernels:
            for launch in k.launches():
                by_tensor = stride_args(launch, k)
                all_edits = []
                for t, args in by_tensor.items():
                    if len(args) < 2:
                        continue
                    top = max(d for _, d, _ in args)
                    names = dim_names(s, launch.host, t) if launch.host is not None else {}
                    for (p1, d1, a1), (p2, d2, a2) in combinations(args, 2):
                        if not forced and not self._mismatch(k, top, (p1, d1), (p2, d2)) and \
                                not self._named_mismatch(names, (p1, d1), (p2, d2)) and \
                                not self._bound_mismatch(k, launch, names, (p1, d1), (p2, d2)):
                            continue
                        edits = [Edit.replace(a1, text(a2)), Edit.replace(a2, text(a1))]
                        all_edits += edits
                        yield self.patch(s, edits, f"swap the strides {text(a1)} and {text(a2)} "
                                                   f"passed to {k.name}")
                if len(all_edits) > 2:
                    yield self.patch(s, all_edits, f"swap every mismatched stride pair for {k.name}")
                yield from self._shape_as_stride(s, k, launch)

    @staticmethod
    def _mismatch(k: Kernel, top: int, a, b) -> bool:
        """The kernel uses the stride of dim d for the tile axis of another dim (2-D view: the last
        two dims are row and column)."""
        def want(pname):
            role = stride_role(k, pname)
            return {"row": top - 1, "col": top}.get(role) if role else None
        (p1, d1), (p2, d2) = a, b
        w1, w2 = want(p1), want(p2)
        return (w1 is not None and w1 != d1 and w1 == d2) or (w2 is not None and w2 != d2 and w2 == d1)

    @staticmethod
    def _named_mismatch(names: dict[int, str], a, b) -> bool:
        """`N = w.shape[0]` names w's dim 0 "n"; passing w.stride(0) for `stride_wk` and w.stride(1)
        for `stride_wn` then has the axes the wrong way round."""
        (p1, d1), (p2, d2) = a, b
        l1, l2 = _axis_letters(p1), _axis_letters(p2)
        for (da, la, lb) in ((d1, l1, l2), (d2, l2, l1)):
            n = names.get(da)
            if n and la and lb and n != la and n == lb:
                return True
        return False

    @staticmethod
    def _bound_mismatch(k: Kernel, launch, names: dict[int, str], a, b) -> bool:
        """The index a stride multiplies is masked against a size the host took from another dim of
        the tensor: `N, _ = w.shape` names w's dim 0 "n", so w.stride(0) cannot step an index masked
        by `offs_k < K` (a weight [N, K] read as [K, N] without its transpose)."""
        bind = launch.bind(k)
        for (p, d), (_, d_other) in ((a, b), (b, a)):
            bound = _mask_bound_of(k, p)
            arg = bind.get(bound) if bound else None
            if arg is None or unparen(arg).type != "identifier":
                continue
            want = text(arg).lower()
            mine, other = names.get(d), names.get(d_other)
            if mine and mine != "_" and mine != want and other in (None, "_", want):
                return True
        return False

    def _shape_as_stride(self, s: Source, k: Kernel, launch):
        """A stride parameter fed a shape or constant: pass the tensor's own stride."""
        bind = launch.bind(k)
        tensors = [(p, text(a)) for p, a in bind.items() if is_pointer(k, p)
                   and unparen(a).type in ("identifier", "attribute")]
        for p in k.params:
            arg = bind.get(p.name)
            if not p.stride_like or arg is None or ".stride(" in text(arg):
                continue
            role = stride_role(k, p.name)
            dims = {"row": ["0"], "col": ["1", "-1"]}.get(role, ["0", "1"])
            owners = [t for ptr, t in tensors if set(re.split(r"_", ptr)) & set(re.split(r"_", p.name))
                      - {"ptr", "stride"}] or [t for _, t in tensors[:1]]
            for t in owners[:1]:
                for d in dims[:1]:
                    yield self.patch(s, [Edit.replace(arg, f"{t}.stride({d})")],
                                     f"pass {t}.stride({d}) for {p.name}")


# -------------------------------------------------------------------------------------------------
LAYOUT_CHANGE = re.compile(r"\.(t|transpose|permute|mT|T|expand|expand_as|narrow|as_strided|unfold|swapaxes|"
                           r"movedim|chunk|split|tensor_split|unbind|select|diagonal)\b|\[[^\]]*[:,][^\]]*\]")


def relaid(s: Source, host: Node | None, call: Node, arg: Node) -> bool:
    """The argument of `call` is (or names a variable of `host` set before the call to) a transpose,
    permute, expand... view: a layout the callee's dense indexing does not take."""
    if LAYOUT_CHANGE.search(text(arg)):
        return True
    if unparen(arg).type == "identifier" and host is not None:
        defs = Deps(s, host).defs.get(text(unparen(arg)), [])
        return any(LAYOUT_CHANGE.search(text(rhs)) and not text(rhs).rstrip().endswith(".contiguous()")
                   for st, rhs in defs if st.start_byte < call.start_byte)
    return False


def made_contiguous(host: Node, name: str) -> bool:
    """`host` already calls `name.contiguous(...)` somewhere."""
    return any(n.type == "call" and text(n).replace(" ", "").startswith(f"{name}.contiguous(")
               for n in walk(host))


def contiguous_of(arg: Node) -> str:
    """`arg.contiguous()`, parenthesised where the argument is an expression."""
    return f"{text(arg)}.contiguous()" if unparen(arg).type in ("call", "attribute", "identifier") \
        else f"({text(arg)}).contiguous()"


class ContiguousInputs(Recipe):
    id = "contiguous_inputs"
    bug_classes = ("stride_layout",)
    symptoms = ("fails_noncontiguous", "hardcoded_stride", "transposed", "all_wrong")
    description = "Kernels assume contiguous tensors: call .contiguous() on inputs before the launch."

    def _propose(self, s: Source, hints: dict):
        edits = []
        for host in launch_hosts(s):
            names = [n for n in tensor_params(s, host)
                     if not made_contiguous(host, n) and not self._strided(s, host, n)]
            if names:
                at, indent = body_insert_point(host)
                optional = self._optional(host)
                code = "".join(f"{indent}{n} = {n}.contiguous() if {n} is not None else None\n" if n in optional
                               else f"{indent}{n} = {n}.contiguous()\n" for n in names)
                edits.append(Edit.insert(at, code))
        for launch in s.launches:
            k = s.kernel(launch.kernel)
            for pname, arg in launch.bind(k).items():
                if is_pointer(k, pname) and relaid(s, launch.host, launch.call, arg) and \
                        not text(arg).rstrip().endswith(".contiguous()"):
                    edits.append(Edit.replace(arg, contiguous_of(arg)))
        yield self.patch(s, edits, "make kernel inputs contiguous before the launch")

    @staticmethod
    def _optional(host: Node) -> set[str]:
        """Parameters that may be None (`bias=None`, `Optional[...]`): made contiguous only when given."""
        return {p.name for p in params(host)
                if (p.default is not None and text(p.default) == "None") or "Optional" in p.annotation
                or "None" in p.annotation}

    @staticmethod
    def _strided(s: Source, host: Node, name: str) -> bool:
        """The launch passes every stride of this tensor (the last one included): the kernel
        handles any layout. Passing only `x.stride(0)` still assumes unit-stride rows."""
        calls = "".join(text(l.call).replace(" ", "") for l in s.launches
                        if l.host is not None and l.host.start_byte == host.start_byte)
        dims = {int(d) for d in re.findall(rf"\b{re.escape(name)}\.stride\((-?\d+)\)", calls)}
        if not dims:
            return False
        if -1 in dims:
            return True
        ndim = None
        for n in walk(host):
            if n.type == "assignment" and text(n.child_by_field_name("right")).replace(" ", "") in (
                    f"{name}.shape", f"{name}.size()"):
                ndim = len(target_names(n.child_by_field_name("left"))) or None
        ndim = ndim or max(max(dims) + 1, 2)
        return dims >= set(range(ndim))
