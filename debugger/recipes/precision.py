"""Precision and dtype recipes: fp32 accumulators (and no tf32 / downcasts in accumulation), the
output's dtype, 64-bit offsets."""
from __future__ import annotations

import re

from debugger.recipes.base import Recipe
from debugger.recipes.indexing import assigned_var, is_pointer, pointer_bases, reductions_of
from debugger.recipes.syntax import Kernel, Source, params
from debugger.source.edits import Edit
from debugger.source.tree import Node, call_arg, call_args, dotted, enclosing, identifiers, text, unparen, walk

LOW = {"tl.float16", "tl.bfloat16", "tl.float8e4nv", "tl.float8e5"}
TORCH_FLOAT = re.compile(r"^torch\.(float(16|32|64)?|half|bfloat16|double)$")
ALLOC = {"torch.empty": None, "torch.zeros": None, "torch.ones": None, "torch.full": None,
         "torch.empty_like": "like", "torch.zeros_like": "like", "torch.ones_like": "like",
         "torch.full_like": "like", "torch.empty_strided": None}
DOWNCASTS = {"float", "half", "bfloat16", "double"}
INDEX_NAME = re.compile(r"idx|index|indices|(^|_)ids?$|label|target|mask", re.I)


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
            casts = [_strip_cast(s, c) for c in low_casts(s, k.body)]
            if casts:
                yield self.patch(s, [e for e in edits if not any(c.start <= e.start < c.end or
                                                                 e.start <= c.start < e.end for c in casts if c)]
                                 + casts, f"compute in the loaded precision: drop every fp16/bf16 cast in {k.name}")
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
            sums = [r for r in reductions_of(k, var, after=c.start_byte) if r.kind == "sum"]
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
    description = ("Output allocated, cast or stored in the wrong dtype -> the input's dtype; int32 index outputs -> "
                   "int64; lossy fp32 casts of values that only meet exact ops.")

    def _propose(self, s: Source, hints: dict):
        edits = []
        for host in launch_hosts(s):
            tensors = tensor_params(s, host)
            edits += self._allocations(s, host, tensors[0] if tensors else None)
            edits += self._returns(s, host)
        for k in s.kernels:
            for st in k.calls("tl.store"):
                value = call_arg(st, 1, "value")
                for c in low_casts(s, value) if value is not None else []:
                    edits.append(_strip_cast(s, c))
            edits += self._lossy_upcasts(s, k)
        edits = [e for e in edits if e is not None]
        if hints.get("expected_dtype"):
            yield from self._expected(s, str(hints["expected_dtype"]))
        yield self.patch(s, edits, "allocate, return and store the output in the input's dtype")
        if len(edits) > 1:
            for e in edits:
                yield self.patch(s, [e], "one dtype fix")

    def _allocations(self, s: Source, host: Node, x: str | None) -> list[Edit]:
        """Allocations of the output: float dtypes -> the input's (`x`'s) dtype, int32 -> int64."""
        edits = []
        returned = {name for r in walk(host) if r.type == "return_statement" and r.named_child_count
                    for name in identifiers(r.named_children[0])}
        for c in s.calls(host, *ALLOC):
            var = assigned_var(c)
            d = call_arg(c, 99, "dtype")
            like = call_arg(c, 0, "input") if ALLOC[s.call_name(c)] == "like" else None
            if x is None and (d is None or TORCH_FLOAT.match(s.canonical(dotted(d)) or "")):
                continue
            if d is None and like is not None and text(like) != x and INDEX_NAME.search(text(like)) and \
                    var in returned | self._outputs(s, host):
                # `empty_like(index)` for a result that holds the data's values, not the index's
                fn = s.call_name(c).replace("_like", "")
                edits.append(Edit.replace(c, f"{fn}({text(like)}.shape, dtype={x}.dtype, device={x}.device)"))
            elif d is not None:
                if TORCH_FLOAT.match(s.canonical(dotted(d)) or "") and var in returned:
                    edits.append(Edit.replace(d, f"{x}.dtype"))
                elif s.canonical(dotted(d)) in ("torch.int32", "torch.int") and var in returned:
                    edits.append(Edit.replace(d, "torch.int64"))  # torch's index results are int64
            elif ALLOC[s.call_name(c)] is None and var in returned:
                edits.append(Edit.insert(c.child_by_field_name("arguments").end_byte - 1,
                                         f", dtype={x}.dtype"))
        return edits

    def _expected(self, s: Source, dtype: str):
        """The evaluation names the dtype the reference returns (`output 0 has dtype int64, expected
        float32`): allocate the returned outputs in it. An integer input divided in the kernel gives
        a float the input's dtype cannot hold."""
        if not re.fullmatch(r"float(16|32|64)|bfloat16|int(8|16|32|64)|bool", dtype):
            return
        edits = []
        for host in launch_hosts(s):
            returned = {name for r in walk(host) if r.type == "return_statement" and r.named_child_count
                        for name in identifiers(r.named_children[0])}
            for c in s.calls(host, *ALLOC):
                if assigned_var(c) not in returned:
                    continue
                d = call_arg(c, 99, "dtype")
                if d is not None:
                    if s.canonical(dotted(d)) != f"torch.{dtype}":
                        edits.append(Edit.replace(d, f"torch.{dtype}"))
                else:
                    edits.append(Edit.insert(c.child_by_field_name("arguments").end_byte - 1,
                                             f", dtype=torch.{dtype}"))
        yield self.patch(s, edits, f"allocate the output as torch.{dtype}, the dtype the reference returns")

    @staticmethod
    def _outputs(s: Source, host: Node) -> set[str]:
        """Host names passed for kernel pointers that the kernel stores to."""
        out = set()
        for l in s.launches:
            if l.host is None or l.host.start_byte != host.start_byte:
                continue
            k = s.kernel(l.kernel)
            stored = set()
            for st in k.calls("tl.store", "tl.atomic_add"):
                stored |= pointer_bases(k, call_arg(st, 0, "pointer"))
            out |= {text(a) for p, a in l.bind(k).items() if p in stored}
        return out

    @staticmethod
    def _lossy_upcasts(s: Source, k: Kernel) -> list[Edit]:
        """`tl.load(...).to(tl.float32)` feeding only exact ops (min/max/where/abs/compare) into a
        store: the cast gains nothing and rounds int64 (or fp64) values."""
        edits = []
        for c in k.calls("tl.load"):
            p = c.parent
            if p is None or p.type != "attribute" or text(p.child_by_field_name("attribute")) != "to" or \
                    p.parent is None or p.parent.type != "call":
                continue
            cast = p.parent
            pos, kw = call_args(cast)
            target = pos[0] if pos else kw.get("dtype")
            if s.canonical(dotted(target)) != "tl.float32":
                continue
            var = assigned_var(c)
            if var is None or not _exact_only(k, var):
                continue
            edits.append(Edit.replace(cast, text(c)))
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


EXACT_CALLS = {"tl.minimum", "tl.maximum", "tl.where", "tl.abs", "tl.clamp"}


def _exact_only(k: Kernel, var: str) -> bool:
    """Every value computed from `var` goes through exact operations only (no arithmetic)."""
    names = {n for n in k.deps.direct if var in k.deps.closure({n})} | {var}
    for n in names - {var}:
        for _, rhs in k.deps.defs.get(n, []):
            for node in walk(rhs):
                if node.type == "binary_operator" or node.type == "call" and k.src.call_name(node) not in EXACT_CALLS:
                    return False
    users = [c for c in k.calls("tl.store") if identifiers(call_arg(c, 1, "value")) & names]
    return bool(users) and len(names) > 1


# -------------------------------------------------------------------------------------------------
class Int64Offsets(Recipe):
    id = "int64_offsets"
    bug_classes = ("index_overflow",)
    symptoms = ("int32_offsets", "never_written", "nan_in_output", "fails_other_shapes", "masked_lane_store")
    description = "Offsets computed in int32: cast the program ids (and int32 index casts) to tl.int64."

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            edits = []
            for c in k.calls("tl.program_id"):
                p = c.parent
                if p is not None and p.type == "attribute" and text(p.child_by_field_name("attribute")) == "to":
                    continue
                edits.append(Edit.insert(c.end_byte, f".to({s.tl}.int64)"))
            yield self.patch(s, edits, f"compute program offsets in int64 in {k.name}")
            casts = [Edit.replace(d, f"{s.tl}.int64") for d in self._int32_casts(s, k)]
            if casts:
                yield self.patch(s, casts, f"widen int32 casts to int64 in {k.name}")
                yield self.patch(s, edits + casts, f"int64 program offsets and casts in {k.name}")

    @staticmethod
    def _int32_casts(s: Source, k: Kernel) -> list[Node]:
        """The dtype nodes of `.to(tl.int32)` casts (index arithmetic that overflows 32 bits)."""
        out = []
        for c in s.calls(k.body):
            f = c.child_by_field_name("function")
            if f is None or f.type != "attribute" or text(f.child_by_field_name("attribute")) != "to":
                continue
            pos, kw = call_args(c)
            d = pos[0] if pos else kw.get("dtype")
            if d is not None and s.canonical(dotted(d)) in ("tl.int32", "tl.uint32"):
                out.append(d)
        return out
