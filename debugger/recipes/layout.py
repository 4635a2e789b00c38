"""Layout recipes for matmul operands: a weight used without its transpose, tf32 where fp32 is meant.

`dot_operand_transpose`: `tl.dot(a, b)` multiplies an [M, K] tile by a [K, N] tile. A weight stored
[N, K] (nn.Linear's layout) loaded with its K offsets on the tile's last axis, the same axis as the
first operand's K, is an [N, K] tile: the product then mixes the wrong elements (or fails on shape
when the blocks differ). The move is `tl.dot(a, tl.trans(b))` (and `tl.trans(a)` for a first operand
loaded [K, M]).

`dot_ieee_precision`: on an NVIDIA GPU a float32 `tl.dot` runs as tf32 by default (10 mantissa bits);
a float32 task at a tight tolerance needs `input_precision="ieee"`. The interpreter computes in full
fp32 either way, so this is a GPU reality the CPU loop cannot see; the recipe is proposed for a float32
task whose tolerance is tighter than tf32's error, or when the diagnosis names the precision class.

`contiguous_view`: host code that flattens its inputs with `.view(-1)` raises on a transposed or
broadcast input (and, where the strides happen to allow the view, flattens a strided tensor the
kernel then reads as dense); when a check raised exactly that error, `.contiguous().view(...)`.
(`.reshape()` would not do: it returns the same strided view wherever a view exists.)
"""
from __future__ import annotations

from debugger.recipes.base import Recipe
from debugger.recipes.indexing import groups, load_var
from debugger.recipes.syntax import Kernel, Source
from debugger.source.edits import Edit
from debugger.source.tree import Node, call_args, line, text, unparen, walk

ROW, COL = "[:,None]", "[None,:]"


def _operand_load(k: Kernel, node: Node) -> Node | None:
    """The tl.load whose value a dot operand names (`w` for `w = tl.load(...)`)."""
    node = unparen(node)
    if node.type != "identifier":
        return None
    for stmt, rhs in k.deps.defs.get(text(node), []):
        for c in k.src.calls(rhs, "tl.load"):
            if load_var(c) == text(node):
                return c
    return None


def _axis_bases(k: Kernel, load: Node) -> dict[str, set[str]] | None:
    """Broadcast suffix -> the index names of a load's pointer along that tile axis."""
    pos, kw = call_args(load)
    ptr = kw.get("pointer") or (pos[0] if pos else None)
    g = groups(k, ptr) if ptr is not None else None
    if not g:
        return None
    from debugger.recipes.indexing import suffix_of

    return {suf: {text(suffix_of(p)[1]) for p in parts} for suf, parts in g.items()}


class DotOperandTranspose(Recipe):
    id = "dot_operand_transpose"
    bug_classes = ("stride_layout",)
    symptoms = ("all_wrong", "large_error", "transposed", "nan_in_output")
    description = "A tl.dot operand loaded as [N, K] (a weight without its transpose): tl.trans it."

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            for dot in k.calls("tl.dot"):
                pos, _ = call_args(dot)
                if len(pos) < 2:
                    continue
                a, b = pos[0], pos[1]
                la, lb = _operand_load(k, a), _operand_load(k, b)
                if la is None or lb is None:
                    continue
                ax, bx = _axis_bases(k, la), _axis_bases(k, lb)
                if not ax or not bx or set(ax) != {ROW, COL} or set(bx) != {ROW, COL}:
                    continue
                a_k, b_k = ax[COL], bx[ROW]
                if a_k & bx[COL] and not a_k & b_k:  # b carries K on its last axis: [N, K]
                    yield self.patch(s, [Edit.replace(b, f"{s.tl}.trans({text(b)})")],
                                     f"transpose the second tl.dot operand {text(b)} at line {line(dot)} "
                                     f"(loaded [N, K])")
                if b_k & ax[ROW] and not a_k & b_k:  # a carries K on its first axis: [K, M]
                    yield self.patch(s, [Edit.replace(a, f"{s.tl}.trans({text(a)})")],
                                     f"transpose the first tl.dot operand {text(a)} at line {line(dot)} "
                                     f"(loaded [K, M])")


TF32_TOLERANCE = 1e-3  # tf32 keeps ~3 decimal digits: a float32 task checked tighter than this needs ieee


class DotIeeePrecision(Recipe):
    id = "dot_ieee_precision"
    bug_classes = ("low_precision_accumulator",)
    symptoms = ("precision_noise", "tf32_dot")
    description = "A float32 tl.dot runs as tf32 on an NVIDIA GPU: set input_precision=\"ieee\"."

    def _propose(self, s: Source, hints: dict):
        tol = hints.get("tolerance")
        wanted = self.forced(hints) or (hints.get("dtype") in (None, "float32") and tol is not None
                                        and tol <= TF32_TOLERANCE)
        if not wanted:
            return
        edits = []
        for k in s.kernels:
            for dot in k.calls("tl.dot"):
                edits += ieee_edits(dot)
        yield self.patch(s, edits, "tl.dot in full fp32 (input_precision=\"ieee\"), not tf32")


def ieee_edits(dot: Node) -> list[Edit]:
    """Edits that make one tl.dot call use ieee fp32: replace allow_tf32= / input_precision=, or add it."""
    _, kw = call_args(dot)
    args = dot.child_by_field_name("arguments")
    if "input_precision" in kw:
        v = text(kw["input_precision"]).strip("'\"")
        return [] if v == "ieee" else [Edit.replace(kw["input_precision"], '"ieee"')]
    for a in args.named_children:
        if a.type == "keyword_argument" and text(a.child_by_field_name("name")) == "allow_tf32":
            return [Edit.replace(a, 'input_precision="ieee"')]
    named = [a for a in args.named_children if a.type != "comment"]
    if not named:
        return []
    return [Edit.insert(named[-1].end_byte, ', input_precision="ieee"')]


def tf32_dots(s: Source) -> list[int]:
    """Lines of tl.dot calls that run as tf32 on a GPU (no input_precision="ieee", no allow_tf32=False)."""
    out = []
    for k in s.kernels:
        for dot in k.calls("tl.dot"):
            _, kw = call_args(dot)
            if "input_precision" in kw and text(kw["input_precision"]).strip("'\"") == "ieee":
                continue
            if "allow_tf32" in kw and text(kw["allow_tf32"]) == "False":
                continue
            out.append(line(dot))
    return out


VIEW_ERROR = "view size is not compatible"


class ContiguousView(Recipe):
    id = "contiguous_view"
    bug_classes = ("stride_layout",)
    symptoms = ("fails_noncontiguous", "raises_exception")
    description = "Host code calls .view() on a tensor that can be non-contiguous: .contiguous().view() (the run raised on it)."

    def _propose(self, s: Source, hints: dict):
        """Only with the run's evidence: a check raised torch's "view size is not compatible" error
        (hints["errors"]), or the diagnosis names the class."""
        if not (any(VIEW_ERROR in e for e in hints.get("errors", ())) or self.forced(hints)):
            return
        edits = []
        for n in walk(s.root):
            if n.type != "call" or s.in_kernel(n) is not None:
                continue
            f = n.child_by_field_name("function")
            if f is not None and f.type == "attribute" and text(f.child_by_field_name("attribute")) == "view":
                pos, kw = call_args(n)
                if pos and not kw and all(p.type in ("integer", "unary_operator", "identifier", "attribute",
                                                     "subscript", "call", "list_splat") for p in pos) \
                        and not any(text(p).startswith("torch.") for p in pos):  # .view(dtype) reinterprets
                    obj = f.child_by_field_name("object")
                    if not text(obj).rstrip().endswith(".contiguous()"):
                        edits.append(Edit.insert(obj.end_byte, ".contiguous()"))
        yield self.patch(s, edits, "contiguous() before view() in the host code (inputs may be non-contiguous)")
