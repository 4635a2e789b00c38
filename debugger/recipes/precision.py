"""Precision and dtype recipes: fp32 accumulators, the output's dtype, 64-bit offsets."""
from __future__ import annotations

import re

from debugger.recipes.base import Edit, Recipe
from debugger.recipes.indexing import assigned_var, is_pointer, reductions_of
from debugger.recipes.syntax import (Kernel, Node, Source, body_insert_point, call_arg, call_args, dotted,
                                     enclosing, identifiers, line, params, text, unparen, walk)

LOW = {"tl.float16", "tl.bfloat16", "tl.float8e4nv", "tl.float8e5"}
TORCH_FLOAT = re.compile(r"^torch\.(float(16|32|64)?|half|bfloat16|double)$")
ALLOC = {"torch.empty": None, "torch.zeros": None, "torch.ones": None, "torch.full": None,
         "torch.empty_like": "like", "torch.zeros_like": "like", "torch.ones_like": "like",
         "torch.full_like": "like", "torch.empty_strided": None}
DOWNCASTS = {"float", "half", "bfloat16", "double"}


def is_low(s: Source, node: Node | None) -> bool:
    return node is not None and s.canonical(dotted(node)) in LOW


def is_accumulator(k: Kernel, var: str) -> bool:
    """`var` is updated from itself (`acc += ...`, `acc = acc + ...`, `tl.dot(a, b, acc)`)."""
    for stmt, rhs in k.deps.defs.get(var, []):
        if stmt.type == "augmented_assignment" or var in identifiers(rhs):
            return True
    return any(text(call_arg(c, 2, "acc")) == var for c in k.calls("tl.dot"))


def _strip_cast(s: Source, call: Node) -> Edit | None:
    """`X.to(low)` -> `X`."""
    f = call.child_by_field_name("function")
    if f is None or f.type != "attribute" or text(f.child_by_field_name("attribute")) != "to":
        return None
    pos, kw = call_args(call)
    target = pos[0] if pos else kw.get("dtype")
    if not is_low(s, target):
        return None
    return Edit.replace(call, text(f.child_by_field_name("object")))


def low_casts(s: Source, root: Node) -> list[Node]:
    """`.to(tl.float16)`-style calls under root."""
    out = []
    for c in s.calls(root):
        f = c.child_by_field_name("function")
        if f is not None and f.type == "attribute" and text(f.child_by_field_name("attribute")) == "to":
            pos, kw = call_args(c)
            if is_low(s, pos[0] if pos else kw.get("dtype")):
                out.append(c)
    return out


def mentions_low_precision(s: Source, hints: dict) -> bool:
    dtype = str(hints.get("dtype", "")) + str(hints.get("input_dtype", ""))
    return bool(re.search(r"float16|bfloat16|half|fp16|bf16", dtype + s.src))


class WidenAccumulator(Recipe):
    id = "widen_accumulator"
    bug_classes = ("low_precision_accumulator",)
    symptoms = ("low_precision_accumulator", "precision_noise", "fails_large_magnitude", "large_error")
    description = "fp16/bf16 accumulators, dot outputs and pre-accumulation casts -> fp32."

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            edits = self._accumulators(s, k) + self._dots(s, k) + self._casts(s, k)
            yield self.patch(s, edits, f"accumulate in fp32 in {k.name}")
            if mentions_low_precision(s, hints):
                loads = self._load_casts(s, k)
                if loads:
                    yield self.patch(s, edits + loads,
                                     f"accumulate in fp32 and upcast loaded values in {k.name}")

    def _accumulators(self, s: Source, k: Kernel) -> list[Edit]:
        edits = []
        for c in k.calls("tl.zeros", "tl.full", "tl.zeros_like", "tl.full_like"):
            pos_index = {"tl.zeros": 1, "tl.full": 2, "tl.zeros_like": 1, "tl.full_like": 2}[s.call_name(c)]
            d = call_arg(c, pos_index, "dtype")
            var = assigned_var(c)
            if d is None or var is None or not is_accumulator(k, var):
                continue
            if is_low(s, d) or re.search(r"\.dtype\.element_ty$|\.dtype$", text(d)):
                edits.append(Edit.replace(d, f"{s.tl}.float32"))
        return edits

    def _dots(self, s: Source, k: Kernel) -> list[Edit]:
        edits = []
        for c in k.calls("tl.dot"):
            _, kw = call_args(c)
            if is_low(s, kw.get("out_dtype")):
                edits.append(Edit.replace(kw["out_dtype"], f"{s.tl}.float32"))
            if "allow_tf32" in kw and text(kw["allow_tf32"]) == "True":
                edits.append(Edit.replace(kw["allow_tf32"], "False"))
            ip = kw.get("input_precision")
            if ip is not None and "tf32" in text(ip):
                edits.append(Edit.replace(ip, '"ieee"'))
        return edits

    def _casts(self, s: Source, k: Kernel) -> list[Edit]:
        """Downcasts inside accumulating statements, and loads downcast before the math."""
        edits = []
        for c in low_casts(s, k.body):
            stmt = enclosing(c, "augmented_assignment", "assignment")
            if stmt is None:
                continue
            left = text(stmt.child_by_field_name("left"))
            obj = c.child_by_field_name("function").child_by_field_name("object")
            accumulating = stmt.type == "augmented_assignment" or is_accumulator(k, left)
            loaded = unparen(obj).type == "call" and s.call_name(unparen(obj)) == "tl.load"
            if accumulating:
                edits.append(_strip_cast(s, c))
            elif loaded:
                pos, kw = call_args(c)
                edits.append(Edit.replace(pos[0] if pos else kw["dtype"], f"{s.tl}.float32"))
        return [e for e in edits if e is not None]

    def _load_casts(self, s: Source, k: Kernel) -> list[Edit]:
        """Upcast loads whose values are summed or accumulated (not those feeding tl.dot)."""
        edits = []
        for c in k.calls("tl.load"):
            p = c.parent
            if p is not None and p.type == "attribute" and text(p.child_by_field_name("attribute")) == "to":
                continue
            var = assigned_var(c)
            if var is None:
                continue
            sums = [r for r, kind in reductions_of(k, var, after=c.start_byte) if kind == "sum"]
            feeds_acc = any(is_accumulator(k, n) and var in k.deps.closure({n}) and n != var
                            for n in k.deps.direct)
            feeds_dot = any(var in identifiers(d) for d in k.calls("tl.dot"))
            if (sums or feeds_acc) and not feeds_dot:
                edits.append(Edit.insert(c.end_byte, f".to({s.tl}.float32)"))
        return edits


# -------------------------------------------------------------------------------------------------
def tensor_params(s: Source, host: Node) -> list[str]:
    """Parameters of a host function that reach a kernel's pointer parameter."""
    names = [p.name for p in params(host) if p.name not in ("self", "cls")]
    used = set()
    for l in s.launches:
        if l.host is None or l.host.start_byte != host.start_byte:
            continue
        k = s.kernel(l.kernel)
        for pname, arg in l.bind(k).items():
            if is_pointer(k, pname) and unparen(arg).type == "identifier":
                used.add(text(unparen(arg)))
    return [n for n in names if n in used]


def launch_hosts(s: Source) -> list[Node]:
    out = {}
    for l in s.launches:
        if l.host is not None:
            out[l.host.start_byte] = l.host
    return list(out.values())


class OutputDtype(Recipe):
    id = "output_dtype"
    bug_classes = ("dtype_cast",)
    symptoms = ("precision_noise", "large_error", "all_wrong")
    description = "Output allocated, cast or stored in the wrong dtype -> the input's dtype."

    def _propose(self, s: Source, hints: dict):
        edits = []
        for host in launch_hosts(s):
            tensors = tensor_params(s, host)
            if not tensors:
                continue
            x = tensors[0]
            edits += self._allocations(s, host, x)
            edits += self._returns(s, host)
        for k in s.kernels:
            for st in k.calls("tl.store"):
                value = call_arg(st, 1, "value")
                for c in low_casts(s, value) if value is not None else []:
                    edits.append(_strip_cast(s, c))
        edits = [e for e in edits if e is not None]
        yield self.patch(s, edits, "allocate, return and store the output in the input's dtype")
        if len(edits) > 1:
            for e in edits:
                yield self.patch(s, [e], "one dtype fix")

    def _allocations(self, s: Source, host: Node, x: str) -> list[Edit]:
        edits = []
        returned = {text(r.named_children[0]) for r in walk(host)
                    if r.type == "return_statement" and r.named_child_count}
        for c in s.calls(host, *ALLOC):
            var = assigned_var(c)
            d = call_arg(c, 99, "dtype")
            if d is not None:
                if TORCH_FLOAT.match(s.canonical(dotted(d)) or "") and var is not None:
                    edits.append(Edit.replace(d, f"{x}.dtype"))
            elif ALLOC[s.call_name(c)] is None and var in returned:
                edits.append(Edit.insert(c.child_by_field_name("arguments").end_byte - 1,
                                         f", dtype={x}.dtype"))
        return edits

    def _returns(self, s: Source, host: Node) -> list[Edit]:
        edits = []
        for r in walk(host):
            if r.type != "return_statement" or not r.named_child_count:
                continue
            v = unparen(r.named_children[0])
            if v.type != "call":
                continue
            f = v.child_by_field_name("function")
            if f.type != "attribute":
                continue
            attr = text(f.child_by_field_name("attribute"))
            pos, _ = call_args(v)
            if attr in DOWNCASTS and not pos or \
                    attr == "to" and pos and TORCH_FLOAT.match(s.canonical(dotted(pos[0])) or ""):
                edits.append(Edit.replace(v, text(f.child_by_field_name("object"))))
        return edits


# -------------------------------------------------------------------------------------------------
class Int64Offsets(Recipe):
    id = "int64_offsets"
    bug_classes = ("index_overflow",)
    symptoms = ("int32_offsets", "never_written", "nan_in_output", "fails_other_shapes", "masked_lane_store")
    description = "Offsets from tl.program_id computed in int32: cast the program ids to tl.int64."

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            edits = []
            for c in k.calls("tl.program_id"):
                p = c.parent
                if p is not None and p.type == "attribute" and text(p.child_by_field_name("attribute")) == "to":
                    continue
                edits.append(Edit.insert(c.end_byte, f".to({s.tl}.int64)"))
            yield self.patch(s, edits, f"compute program offsets in int64 in {k.name}")
