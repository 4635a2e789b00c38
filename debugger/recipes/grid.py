"""Launch-grid recipes: cdiv instead of floor division (and one program per row of every leading
dim), swapped program-id axes, a block that must cover the whole row."""
from __future__ import annotations

import re
from itertools import combinations

from debugger.recipes.base import Recipe
from debugger.recipes.indexing import is_pointer
from debugger.recipes.syntax import LOOP, Deps, Kernel, Launch, Source
from debugger.source.edits import Edit
from debugger.source.tree import Node, call_args, enclosing, identifiers, inside, number, text, unparen, walk

MODULES = {"triton", "tl", "torch", "math", "meta", "META", "self", "int", "min", "max"}


def _is_ceil_form(left: Node, right: Node) -> bool:
    """`(a + b - 1) // b` or `(a + (b - 1)) // b`: already a ceiling division."""
    t = text(unparen(left)).replace(" ", "")
    return t.endswith("-1") or t.endswith("-1)") or f"+{text(right).replace(' ', '')}-1" in t


def floor_divisions(s: Source, roots: list[Node]) -> list[tuple[Node, Node, Node]]:
    """(node, numerator, denominator) for each floor division under `roots` (not ceil forms)."""
    out = []
    for root in roots:
        for n in walk(root):
            if n.type == "binary_operator" and text(n.child_by_field_name("operator")) == "//":
                a, b = n.child_by_field_name("left"), n.child_by_field_name("right")
                if n.parent is not None and n.parent.type == "unary_operator":
                    continue
                if a.type == "unary_operator" or _is_ceil_form(a, b):
                    continue
                out.append((n, a, b))
            elif n.type == "call" and s.call_name(n) in ("int", "math.floor"):
                pos, _ = call_args(n)
                arg = unparen(pos[0]) if len(pos) == 1 else None
                if arg is not None and arg.type == "binary_operator" and \
                        text(arg.child_by_field_name("operator")) == "/":
                    out.append((n, arg.child_by_field_name("left"), arg.child_by_field_name("right")))
    return out


def grid_roots(s: Source, launch: Launch) -> list[Node]:
    """The grid expression and the host definitions of the names it reads (two levels)."""
    roots = launch.grid_exprs()
    host = launch.host
    if host is None:
        return roots
    deps = Deps(s, host)
    names = set()
    for r in roots:
        names |= identifiers(r)
    for _ in range(2):
        more = set()
        for name in names:
            for stmt, rhs in deps.defs.get(name, []):
                if stmt.start_byte < launch.call.start_byte and rhs not in roots:
                    roots.append(rhs)
                    more |= identifiers(rhs)
        names = more - names
    return roots


class GridCdiv(Recipe):
    id = "grid_cdiv"
    bug_classes = ("grid_undercount",)
    symptoms = ("floor_div_grid", "tail_block_wrong", "never_written", "programs_missing")
    description = "Floor division in a launch grid (or a kernel's block count) -> triton.cdiv."

    def _propose(self, s: Source, hints: dict):
        edits = []
        seen = set()
        for launch in s.launches:
            for node, a, b in floor_divisions(s, grid_roots(s, launch)):
                if node.start_byte not in seen:
                    seen.add(node.start_byte)
                    edits.append(Edit.replace(node, s.triton_call("cdiv", text(a), text(b))))
        for k in s.kernels:
            for stmt in k.nodes("assignment"):
                name = text(stmt.child_by_field_name("left"))
                if not any(w in name.lower() for w in ("num_pid", "num_block", "n_block", "nblocks",
                                                       "num_tiles", "n_tiles", "grid")):
                    continue
                for node, a, b in floor_divisions(s, [stmt.child_by_field_name("right")]):
                    edits.append(Edit.replace(node, f"{s.tl}.cdiv({text(a)}, {text(b)})"))
        yield self.patch(s, edits, "replace floor division in the grid by cdiv")
        if len(edits) > 1:
            for e in edits:
                yield self.patch(s, [e], "replace one floor division in the grid by cdiv")
        for launch in s.launches:
            yield from self._row_count(s, launch)

    def _row_count(self, s: Source, launch: Launch):
        """`grid = (x.shape[0],)` for a kernel that walks rows of length `x.shape[-1]`: an input with
        more than two dims has `x.numel() // x.shape[-1]` rows."""
        dims = launch.grid_dims()
        m = re.fullmatch(r"(\w+)\.(?:shape\[0\]|size\(0\))", text(dims[0]).replace(" ", "")) \
            if len(dims) == 1 else None
        k = s.kernel(launch.kernel)
        if m is None or k is None or launch.host is None:
            return
        t = m.group(1)
        last = {f"{t}.shape[-1]", f"{t}.size(-1)"}
        host = Deps(s, launch.host)
        bind = launch.bind(k)
        for p in _kernel_evidence(k, _pid_vars(k).get("0", set())) | _row_strides(k):
            arg = bind.get(p)
            if arg is None:
                continue
            a = text(arg).replace(" ", "")
            rhs = [text(r).replace(" ", "") for _, r in host.defs.get(a, [])]
            if a in last or any(r in last for r in rhs):
                yield self.patch(s, [Edit.replace(dims[0], f"{t}.numel() // {text(arg)}")],
                                 f"launch one program per row of every leading dim of {t}")
                return


def _row_strides(k: Kernel) -> set[str]:
    """Parameters a program id is multiplied by (`row * D`): the row length of a row kernel."""
    pids = _pid_vars(k).get("0", set())
    out = set()
    for n in k.nodes("binary_operator"):
        if text(n.child_by_field_name("operator")) != "*":
            continue
        ops = [unparen(c) for c in (n.child_by_field_name("left"), n.child_by_field_name("right"))]
        if any(o.type == "identifier" and text(o) in pids for o in ops):
            out |= {text(o) for o in ops if o.type == "identifier" and k.param(text(o))}
    return out


# -------------------------------------------------------------------------------------------------
def _pid_vars(k: Kernel) -> dict[str, set[str]]:
    """Axis -> names assigned directly from tl.program_id(axis) (plus the axis marker itself)."""
    out: dict[str, set[str]] = {}
    for name, defs in k.deps.defs.items():
        for stmt, rhs in defs:
            for c in k.src.calls(rhs, "tl.program_id"):
                axis = call_args(c)[0][0] if call_args(c)[0] else call_args(c)[1].get("axis")
                out.setdefault(text(axis), set()).add(name)
    return out


def _kernel_evidence(k: Kernel, pid_names: set[str]) -> set[str]:
    """What an axis's program id is tied to: the block sizes it is multiplied by and the bounds its
    offsets are compared with (the pid variables and the names computed directly from them)."""
    near = set(pid_names)
    for name, defs in k.deps.defs.items():
        if any(identifiers(rhs) & pid_names for _, rhs in defs):
            near.add(name)
    ev: set[str] = set()
    for n in walk(k.body):
        if n.type == "binary_operator" and text(n.child_by_field_name("operator")) == "*":
            ops = [unparen(c) for c in (n.child_by_field_name("left"), n.child_by_field_name("right"))]
            if any(o.type == "identifier" and text(o) in pid_names for o in ops):
                ev |= {text(o) for o in ops if o.type == "identifier" and k.is_constexpr(text(o))}
        elif n.type == "comparison_operator" and n.named_child_count == 2:
            left, right = (unparen(c) for c in n.named_children)
            for a, b in ((left, right), (right, left)):
                base = a.child_by_field_name("value") if a.type == "subscript" else a
                if base is not None and base.type == "identifier" and text(base) in near:
                    ev |= identifiers(b) - near
    return ev


def _host_tokens(s: Source, node: Node, tensors: set[str]) -> tuple[set[str], set[str]]:
    """(strong, weak) tokens of a host expression: names and shape expressions; number literals."""
    strong = identifiers(node) - MODULES - tensors
    strong |= {text(c)[1:-1] for c in walk(node) if c.type == "string"}
    strong |= {text(c).replace(" ", "") for c in walk(node)
               if c.type in ("subscript", "call") and ("shape" in text(c) or ".size(" in text(c))}
    weak = {text(c) for c in walk(node) if c.type == "integer"}
    return strong, weak


def _axes_consistent(s: Source, k: Kernel, launch: Launch) -> bool | None:
    """True/False when the grid's dims and the kernel's pid axes visibly agree/disagree; None if unknown."""
    dims = launch.grid_dims()
    bind = launch.bind(k)
    tensors = {text(v) for p, v in bind.items() if is_pointer(k, p)}
    kernel_ev: dict[int, tuple[set[str], set[str]]] = {}
    for axis, names in _pid_vars(k).items():
        if not axis.isdigit():
            continue
        strong, weak = set(), set()
        for p in _kernel_evidence(k, names):
            strong.add(p)
            if p in bind:
                st, wk = _host_tokens(s, bind[p], tensors)
                strong |= st
                weak |= wk
        kernel_ev[int(axis)] = (strong, weak)
    grid_ev = {i: _host_tokens(s, d, tensors) for i, d in enumerate(dims)}
    verdicts = []
    for a, (strong, weak) in kernel_ev.items():
        if a not in grid_ev:
            continue
        for pick in (0, 1):  # names first; number literals only when names say nothing
            mine = (strong, weak)[pick]
            theirs = {b: g[pick] for b, g in grid_ev.items()}
            if not mine or not theirs[a] and not any(theirs.values()):
                continue
            if mine & theirs[a]:
                verdicts.append(True)
                break
            if any(mine & g for b, g in theirs.items() if b != a):
                verdicts.append(False)
                break
    if not verdicts:
        return None
    return all(verdicts)


class SwapProgramIdAxis(Recipe):
    id = "swap_program_id_axis"
    bug_classes = ("program_id_axis",)
    symptoms = ("transposed", "whole_rows_wrong", "whole_cols_wrong", "never_written", "programs_missing",
                "one_tile_wrong")
    description = "tl.program_id(0)/(1) mapped to the wrong grid axes: swap them in the kernel or the grid."

    def _propose(self, s: Source, hints: dict):
        forced = self.forced(hints)
        for k in s.kernels:
            calls = k.calls("tl.program_id")
            axes = sorted({text(call_args(c)[0][0]) for c in calls if call_args(c)[0]})
            if len(axes) < 2:
                continue
            verdicts = [_axes_consistent(s, k, l) for l in k.launches()]
            if not forced and verdicts and all(v is True for v in verdicts):
                continue
            for a, b in combinations(axes, 2):
                edits = []
                for c in calls:
                    axis = call_args(c)[0][0]
                    if text(axis) in (a, b):
                        edits.append(Edit.replace(axis, b if text(axis) == a else a))
                yield self.patch(s, edits, f"swap tl.program_id({a}) and tl.program_id({b}) in {k.name}")
            for l in k.launches():
                dims = l.grid_dims()
                if len(dims) < 2:
                    continue
                for i, j in combinations(range(len(dims)), 2):
                    yield self.patch(s, [Edit.replace(dims[i], text(dims[j])),
                                         Edit.replace(dims[j], text(dims[i]))],
                                     f"swap grid dimensions {i} and {j} of the {k.name} launch")


# -------------------------------------------------------------------------------------------------
def row_blocks(k: Kernel) -> list[tuple[str, str]]:
    """(BLOCK param, bound param) for offsets `tl.arange(0, BLOCK)` that no program id or loop
    shifts, compared against a size parameter: one block is meant to cover a whole row."""
    out = []
    for name, defs in k.deps.defs.items():
        for stmt, rhs in defs:
            rhs = unparen(rhs)
            if rhs.type != "call" or k.src.call_name(rhs) != "tl.arange":
                continue
            if enclosing(stmt, "for_statement", "while_statement") and \
                    inside(enclosing(stmt, "for_statement", "while_statement"), k.fn):
                continue
            pos, _ = call_args(rhs)
            if len(pos) != 2 or number(pos[0]) != 0 or not k.is_constexpr(text(pos[1])):
                continue
            if _shifted_by_loop(k, name):
                continue
            for cmp in k.nodes("comparison_operator"):
                ops = [unparen(c) for c in cmp.named_children]
                if len(ops) != 2 or "<" not in text(cmp):
                    continue
                base = ops[0].child_by_field_name("value") if ops[0].type == "subscript" else ops[0]
                if text(base) == name and ops[1].type == "identifier" and k.param(text(ops[1])):
                    out.append((text(pos[1]), text(ops[1])))
    return list(dict.fromkeys(out))


def _shifted_by_loop(k: Kernel, name: str) -> bool:
    """`name` is added to a loop-dependent offset somewhere (the kernel already loops over the row)."""
    for n in walk(k.body):
        if n.type == "identifier" and text(n) == name and n.parent.type == "binary_operator" \
                and text(n.parent.child_by_field_name("operator")) == "+" and LOOP in k.deps.of(n.parent):
            return True
    return False


class BlockCoversRow(Recipe):
    id = "block_covers_row"
    bug_classes = ("reduction_axis",)
    symptoms = ("block_smaller_than_row", "whole_rows_wrong", "intermediate_wrong", "fails_other_shapes")
    description = "One block must span the whole row: launch with BLOCK = triton.next_power_of_2(N)."

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            for block, bound in row_blocks(k):
                edits = []
                for l in k.launches():
                    bind = l.bind(k)
                    if block not in bind or bound not in bind:
                        continue
                    arg = bind[block]
                    if _already_pow2(s, l, arg):
                        continue
                    edits.append(Edit.replace(arg, s.triton_call("next_power_of_2", text(bind[bound]))))
                yield self.patch(s, edits, f"launch {k.name} with {block} = next_power_of_2({bound})")


def _already_pow2(s: Source, l: Launch, arg: Node) -> bool:
    """The block argument is (or names a host variable set to) exactly next_power_of_2(...)."""
    node = unparen(arg)
    if node.type == "identifier" and l.host is not None:
        defs = [rhs for stmt, rhs in Deps(s, l.host).defs.get(text(node), [])
                if stmt.start_byte < l.call.start_byte]
        if defs:
            node = unparen(defs[-1])
    return node.type == "call" and s.call_name(node) == "triton.next_power_of_2"
