"""Block partials combined with atomics: cuda_atomic_partials (fact `cuda_block_partials_race`) and
cuda_combine_partials (fact `cuda_partials_not_combined`).

Both rewrite the store facts.partial_stores points at, thread 0's `out[k] = v;` after a block's sum
reduction (shared memory or shuffles), into `atomicAdd(&out[k'], v);`:
- race (every block stores to the same element, or blocks along another grid axis share it): k' = k;
- not combined (one slot per block, `partial[blockIdx.x]`, that nothing sums): the block index of the
  axis the data is split along is dropped, k' = 0, so the blocks add into the first slot (a host pass
  that sums the slots after it still sees the same total); a slot of another axis (`y[row]`, the row
  on blockIdx.y and the row's chunks on blockIdx.x) keeps its index; any other slot is left.
The output the blocks add into must start at zero: when the launch hands the kernel a buffer the host
function allocates with torch::empty / empty_like / new_empty, that becomes zeros; a buffer the host
function gets from elsewhere (the Python wrapper's tensor) gets `buf.zero_();` before the launch; an
already zeroed one is left. A `+=` store keeps its buffer as it is (it already adds to it).
Only a sum, of a float or double output, whose stored value is the block's sum scaled (`s[0]`,
`s[0] / n`, `sum * scale`): a max or a norm's `sqrtf(s[0])` does not add across blocks, and is left.
"""
from __future__ import annotations

import re

from tree_sitter import Node

from debugger.lang.cuda.access import Access, accesses
from debugger.lang.cuda.facts import SHUFFLE, _block_axes, _flat_index_names, partial_stores
from debugger.lang.cuda.host_facts import _buffer, combines
from debugger.lang.cuda.recipes.base import CudaRecipe, UnitEdit, indent_at, line_start, starts_line
from debugger.lang.cuda.sources import python_code
from debugger.lang.cuda.unit import BLOCK, Function, Unit, identifiers
from debugger.source.tree import ancestors, text, unparen, walk

_EMPTY = re.compile(r"\b(?:torch|at)::(empty(?:_like)?)\s*\(|\.(new_empty)\s*\(")
_ZERO_ALLOC = re.compile(r"\b(?:torch|at)::zeros(?:_like)?\s*\(|\.new_zeros\s*\(")
_CASTS = re.compile(r"^(static_cast<\s*(float|double)\s*>|float|double)$")


def reduction_op(fn: Function) -> str | None:
    """sum, max or min: how the kernel's block reduction combines two values (None: cannot tell)."""
    halving = [lp for lp in fn.nodes("for_statement", "while_statement")
               if re.search(r"(>>=\s*1|/=\s*2|/\s*2|>>\s*1)\s*\)?$", text(lp.child_by_field_name("update")).strip())]
    steps = [a for a in fn.nodes("assignment_expression")
             if any(a.start_byte >= lp.start_byte and a.end_byte <= lp.end_byte for lp in halving)
             or any(n.type == "call_expression" and SHUFFLE.match(_callee(n)) for n in walk(a))]
    for a in steps:
        op, right = text(a.child_by_field_name("operator")), unparen(a.child_by_field_name("right"))
        if op == "+=" or (op == "=" and right.type == "binary_expression"
                          and text(right.child_by_field_name("operator")) == "+"):
            return "sum"
        if op == "=" and right.type == "call_expression":
            callee = _callee(right)
            if re.match(r"^(fmaxf?|max)$", callee):
                return "max"
            if re.match(r"^(fminf?|min)$", callee):
                return "min"
    return None


def _callee(call: Node) -> str:
    return text(call.child_by_field_name("function")).split("::")[-1]


def _scaled_sum(value: Node) -> bool:
    """The stored value is the block's sum, cast or scaled by `*` or `/` (no other call, no `+`)."""
    value = unparen(value)
    if value.type in ("identifier", "subscript_expression"):
        return True
    if value.type == "cast_expression":
        return _scaled_sum(value.child_by_field_name("value"))
    if value.type == "call_expression":
        args = value.child_by_field_name("arguments")
        callee = text(value.child_by_field_name("function")).replace(" ", "")
        return bool(_CASTS.match(callee)) and args is not None and len(args.named_children) == 1 and \
            _scaled_sum(args.named_children[0])
    if value.type == "binary_expression" and text(value.child_by_field_name("operator")) in ("*", "/"):
        left, right = value.child_by_field_name("left"), value.child_by_field_name("right")
        return _scaled_sum(left) or (text(value.child_by_field_name("operator")) == "*" and _scaled_sum(right))
    return False


def split_axes(fn: Function) -> set[str]:
    """The blockIdx axes (`blockIdx.x`) the kernel's global indices split the data along (`blockIdx.x * blockDim.x`)."""
    out = set()
    for name in _flat_index_names(fn):
        for v in fn.defs.get(name, []):
            t = text(v).replace(" ", "")
            out |= {f"blockIdx.{m}" for m in re.findall(r"blockIdx\.([xyz])\*blockDim", t)}
            out |= {f"blockIdx.{m}" for m in re.findall(r"blockDim\.[xyz]\*blockIdx\.([xyz])", t)}
    return out


def _assignment(a: Access) -> Node | None:
    node = a.node
    while node.parent is not None and node.parent.type == "parenthesized_expression":
        node = node.parent
    parent = node.parent
    if parent is None or parent.type != "assignment_expression" or parent.child_by_field_name("left") != node:
        return None
    return parent


def _statement_of(node: Node) -> Node:
    for a in ancestors(node):
        if a.type == "expression_statement":
            return a
    return node


def zero_edits(unit: Unit, fn: Function, pointer: str) -> list[UnitEdit] | None:
    """Edits making the buffer every launch of `fn` hands to `pointer` start at zero; None when a launch
    hands it something that cannot be followed to a tensor, or a buffer an earlier launch wrote."""
    index = next((i for i, p in enumerate(fn.params) if p.name == pointer), None)
    launches = [ln for ln in unit.launches if ln.kernel == fn.name]
    if index is None or not launches:
        return None
    data = unit.source.text.encode()
    edits: dict[tuple[int, int], str] = {}
    for ln in launches:
        if index >= len(ln.args):
            return None
        buf = _buffer(ln.args[index])
        if buf is None:
            return None
        host = ln.host
        earlier = [o for o in unit.launches if o.host is host and o.node.start_byte < ln.node.start_byte
                   and any(_buffer(x) == buf for x in o.args)]
        if earlier:
            return None
        before = text(host.body)[:ln.node.start_byte - host.body.start_byte]
        if re.search(rf"\b{re.escape(buf)}\s*\.\s*(zero_|fill_)\s*\(|cudaMemset\w*\s*\([^;]*\b{re.escape(buf)}\b",
                     before):
            continue
        values = [v for v in host.defs.get(buf, []) if v.start_byte < ln.node.start_byte]
        if values and _ZERO_ALLOC.search(text(values[-1])):
            continue
        m = _EMPTY.search(text(values[-1])) if values else None
        if m is not None and len(values) == 1:
            group = 1 if m.group(1) else 2
            start = values[-1].start_byte + len(text(values[-1])[:m.start(group)].encode())
            word = m.group(group)
            edits[(start, start + len(word.encode()))] = word.replace("empty", "zeros")
            continue
        stmt = _statement_of(ln.node)
        if starts_line(data, stmt.start_byte):
            at = line_start(data, stmt.start_byte)
            edits[(at, at)] = f"{indent_at(data, stmt.start_byte)}{buf}.zero_();\n"
        else:
            edits[(stmt.start_byte, stmt.start_byte)] = f"{buf}.zero_(); "
    return [(a, b, new) for (a, b), new in edits.items()]


def atomic_edits(fn: Function, unit: Unit, store: Access, drop_block: bool) -> tuple[list[UnitEdit], str] | None:
    """`out[k] = v;` -> `atomicAdd(&out[k], v);` (k -> 0 with `drop_block`), and the output zeroed."""
    assign = _assignment(store)
    param = next((p for p in fn.params if p.name == store.base), None)
    if assign is None or param is None or not re.search(r"\b(float|double)\b", param.type) \
            or reduction_op(fn) != "sum" or store.node.type != "subscript_expression":
        return None
    op, value = text(assign.child_by_field_name("operator")), assign.child_by_field_name("right")
    if op not in ("=", "+=") or not _scaled_sum(value):
        return None
    index = text(store.index)
    if store.index.type == "subscript_argument_list":  # `[k]`
        index = index.strip()[1:-1].strip()
    if drop_block and _block_axes(fn, store) & split_axes(fn):
        names = identifiers(store.index)
        if not names or fn.closure(names) - names - {BLOCK} or not _block_axes(fn, store) <= split_axes(fn) or \
                re.search(r"[-+*/%]", index):
            return None  # only a slot that is the block index itself (`partial[blockIdx.x]`, `partial[bid]`)
        index = "0"
    base = text(store.node.child_by_field_name("argument"))
    edits: list[UnitEdit] = [(assign.start_byte, assign.end_byte, f"atomicAdd(&{base}[{index}], {text(value)})")]
    if op == "=":
        zero = zero_edits(unit, fn, store.base)
        if zero is None:
            return None
        edits += zero
    return edits, f"atomicAdd(&{base}[{index}], ...) in {fn.name} into a zeroed {store.base}"


class _Partials(CudaRecipe):
    tag = ""
    drop_block = False

    def _propose(self, s, hints):
        # the facts' `combined` reads the Python side (a .sum() there combines the partials)
        return super()._propose(s, {**hints, "python_code": python_code(s.src)})

    def unit_fixes(self, unit: Unit, hints):
        python = hints.get("python_code", "")
        for fn in unit.kernels:
            for tag, store, _ in partial_stores(fn, accesses(fn), lambda f, ptr: combines(unit, f, ptr, python)):
                if tag != self.tag:
                    continue
                found = atomic_edits(fn, unit, store, self.drop_block)
                if found is not None:
                    yield found


class CudaAtomicPartials(_Partials):
    id = "cuda_atomic_partials"
    bug_classes = ("write_race",)
    symptoms = ("cuda_block_partials_race", "store_without_atomic", "programs_overlap", "run_to_run_drift",
                "all_wrong")
    description = "CUDA: blocks add their partial sums into the shared output element with atomicAdd (output zeroed)"
    tag = "cuda_block_partials_race"


class CudaCombinePartials(_Partials):
    id = "cuda_combine_partials"
    bug_classes = ("reduction_axis",)
    symptoms = ("cuda_partials_not_combined", "all_wrong", "large_error")
    description = "CUDA: per-block partial sums combined with atomicAdd into one zeroed element"
    tag = "cuda_partials_not_combined"
    drop_block = True
