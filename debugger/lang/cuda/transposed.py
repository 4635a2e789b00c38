"""CUDA facts of a transposed convolution computed as a gather, read with the convolution's conventions.

A transposed convolution computed per output element (the gather form) reads the input at
`i = (o + pad - k * dil) / stride` where that divides evenly, and pairs it with tap `k` of the weight,
which PyTorch holds as (in_channels, out_channels / groups, k...). Real answers mix that form with the
convolution-equivalent rewrite (flipped taps, a (out, in, k...) weight):
- cuda_transposed_taps_flipped: the position subtracts tap `k` while the weight index reads tap
  `K - 1 - k` (the flip belongs to the convolution rewrite, not to the gather), or the position adds
  `2 * pad` (the output-size formula's padding, not the position's).
- cuda_transposed_weight_out_major: the weight index strides the output channel by the input-channel
  count (`oc * C_in * K + ic * K`, `(oc * C_in + ic) * K`): a convolution's layout where ConvTranspose
  holds (in, out / groups, k...).

`transposed_gathers` returns what recipes/transposed.py rewrites, so fact and fix see the same nodes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from debugger.lang import Fact
from debugger.lang.cuda.access import accesses
from debugger.lang.cuda.unit import BLOCK, THREAD, Function, identifiers, int_params
from debugger.source.tree import text, unparen, walk

STRIDE_LIKE = re.compile(r"stride", re.I)
PAD_LIKE = re.compile(r"pad", re.I)
WEIGHT_LIKE = re.compile(r"weight|^w$|^w_|_w$|filter", re.I)
IN_COUNT = re.compile(r"^(?:in|input)_?(?:channels?|chans?|ch|c|planes|features)$|^c_?in$|^(?:n|num)_?in$|^cin$",
                      re.I)
OUT_COUNT = re.compile(r"^(?:out|output)_?(?:channels?|chans?|ch|c|planes|features)$|^c_?out$|^(?:n|num)_?out$|"
                       r"^cout$", re.I)
GROUPS_LIKE = re.compile(r"^(?:num_|n_)?groups?$", re.I)

UnitEdit = tuple[int, int, str]


@dataclass(frozen=True)
class TransposedGather:
    """One weight read of a gather-form transposed convolution and what is wrong with it."""

    weight: Node                   # the weight index expression (the subscript, or the local it reads)
    taps: tuple[str, ...]          # tap loop variables the input positions subtract
    flips: tuple[UnitEdit, ...]    # `K - 1 - k` -> `k` in the weight index
    doubled: tuple[UnitEdit, ...]  # `2 * pad` -> `pad` in the input positions
    swap: tuple[UnitEdit, ...]     # the (in, out / groups, k...) layout for an out-channel-major index
    channels: tuple[str, str] | None = None  # (out-channel index, in-channel index) when out-major

    @property
    def tap_edits(self) -> list[UnitEdit]:
        return list(self.flips) + list(self.doubled)


def _numeral(node: Node | None, value: str) -> bool:
    return node is not None and unparen(node).type == "number_literal" and text(unparen(node)) == value


def _op(node: Node) -> str:
    return text(node.child_by_field_name("operator")) if node.type == "binary_expression" else ""


def _subtracted_taps(node: Node, loop_vars: set[str]) -> set[str]:
    """Loop variables `node` subtracts, alone or scaled (`- k`, `- k * dil`)."""
    out = set()
    for b in walk(node):
        if _op(b) != "-":
            continue
        right = unparen(b.child_by_field_name("right"))
        if right.type == "identifier" and text(right) in loop_vars:
            out.add(text(right))
        elif _op(right) == "*":
            out |= {text(unparen(s)) for s in (right.child_by_field_name("left"), right.child_by_field_name("right"))
                    if unparen(s).type == "identifier" and text(unparen(s)) in loop_vars}
    return out


def _loop_vars(fn: Function) -> set[str]:
    out = set()
    for loop in fn.nodes("for_statement"):
        init = loop.child_by_field_name("initializer")
        if init is None:
            continue
        for d in walk(init):
            if d.type == "init_declarator":
                name = d.child_by_field_name("declarator")
                if name is not None and name.type == "identifier":
                    out.add(text(name))
            elif d.type == "assignment_expression" and unparen(d.child_by_field_name("left")).type == "identifier":
                out.add(text(unparen(d.child_by_field_name("left"))))
    return out


def _positions(fn: Function, loop_vars: set[str]) -> tuple[list[Node], set[str]]:
    """The expressions of input positions tested or divided by a stride (`p % stride`, `(o + pad - k) /
    stride`, through a local's definitions), and the tap variables they subtract."""
    sources, taps = [], set()
    for b in fn.nodes("binary_expression"):
        if _op(b) not in ("%", "/") or not STRIDE_LIKE.search(text(b.child_by_field_name("right"))):
            continue
        left = unparen(b.child_by_field_name("left"))
        values = fn.defs.get(text(left), []) if left.type == "identifier" else [left]
        for v in values:
            found = _subtracted_taps(v, loop_vars)
            if found and all(v != s for s in sources):
                sources.append(v)
                taps |= found
    return sources, taps


def _flip(b: Node, taps: set[str]) -> str | None:
    """The tap of `K - 1 - k` or `K - k - 1`."""
    if _op(b) != "-":
        return None
    left, right = unparen(b.child_by_field_name("left")), unparen(b.child_by_field_name("right"))
    if right.type == "identifier" and text(right) in taps and _op(left) == "-" and \
            _numeral(left.child_by_field_name("right"), "1"):
        return text(right)
    if _numeral(right, "1") and _op(left) == "-":
        inner = unparen(left.child_by_field_name("right"))
        if inner.type == "identifier" and text(inner) in taps:
            return text(inner)
    return None


def _outer(node: Node) -> Node:
    while node.parent is not None and node.parent.type == "parenthesized_expression":
        node = node.parent
    return node


def _factor_names(product: Node) -> set[str]:
    """Identifiers among the factors of a product, through parenthesised products (`oc * (C_in * K)`)."""
    out, todo = set(), [product]
    while todo:
        n = unparen(todo.pop())
        if _op(n) == "*":
            todo += [n.child_by_field_name("left"), n.child_by_field_name("right")]
        elif n.type == "identifier":
            out.add(text(n))
        elif _op(n) == "/":  # C_in / groups
            todo.append(n.child_by_field_name("left"))
    return out


def _index_local(fn: Function, name: str) -> bool:
    return bool({THREAD, BLOCK} & fn.closure({name}))


def _single_def(fn: Function, name: str) -> Node | None:
    values = fn.defs.get(name, [])
    return values[0] if len(values) == 1 else None


def _per_group(fn: Function, count: str, groups: str) -> str | None:
    """A local defined as `count / groups` (`out_ch_per_group`)."""
    want = f"{count}/{groups}"
    for name in fn.declared:
        value = _single_def(fn, name)
        if value is not None and re.sub(r"[\s()]", "", text(value)) == want:
            return name
    return None


def _swap(fn: Function, expr: Node, taps: set[str], input_names: set[str]) -> tuple[tuple[UnitEdit, ...], tuple]:
    """Edits that turn an out-channel-major weight index into ConvTranspose's (in, out / groups, k...)."""
    names = identifiers(expr)
    params = set(int_params(fn))
    loops = _loop_vars(fn)

    def count(n: str, pattern: re.Pattern) -> bool:  # a channel count, not an index named like one (in_ch)
        return bool(pattern.match(n)) and (n in params or n in fn.declared and n not in loops
                                           and not _index_local(fn, n))

    groups = next((p for p in int_params(fn) if GROUPS_LIKE.match(p)), None)
    in_total = next((p for p in int_params(fn) if IN_COUNT.match(p)), None)
    in_group = _per_group(fn, in_total, groups) if groups and in_total else None
    ins = sorted(n for n in names if count(n, IN_COUNT))
    if in_group in names:  # the candidate's own (out, in / groups, k...) stride
        ins.append(in_group)
    outs_known = [p for p in int_params(fn) if OUT_COUNT.match(p)] + \
        sorted(n for n in fn.declared if count(n, OUT_COUNT))
    ic = [n for n in names & input_names if n not in taps and n not in params and n not in ins]
    oc = [n for n in names - input_names if n not in taps and n not in params and n in fn.declared
          and _index_local(fn, n) and not count(n, OUT_COUNT)]
    if len(ic) != 1 or len(oc) != 1 or not ins or not outs_known:
        return (), None
    ic, oc, out_count = ic[0], oc[0], outs_known[0]
    products = [n for n in walk(expr) if _op(n) == "*" and _op(_outer(n).parent) != "*"]
    if not any({oc} <= _factor_names(p) and set(ins) & _factor_names(p) for p in products):
        return (), None
    if groups:
        ocg = _per_group(fn, out_count, groups) or f"({out_count} / {groups})"
        oc_to, ic_to = ic, f"({oc} % {ocg})"
    else:
        ocg, oc_to, ic_to = out_count, ic, oc
    edits, covered = [], []
    if groups:
        for b in walk(expr):
            if _op(b) == "/" and in_total and re.sub(r"[\s()]", "", text(b)) == f"{in_total}/{groups}":
                node = _outer(b)
                edits.append((node.start_byte, node.end_byte, ocg))
                covered.append(node)
    for n in walk(expr):
        if n.type != "identifier" or any(c.start_byte <= n.start_byte < c.end_byte for c in covered):
            continue
        t = text(n)
        new = oc_to if t == oc else ic_to if t == ic else ocg if t in ins else \
            (in_total or ins[0]) if count(t, OUT_COUNT) else None
        if new is not None:
            edits.append((n.start_byte, n.end_byte, new))
    return tuple(edits), (oc, ic)


def _index(fn: Function, node: Node) -> Node:
    """An access's index expression, through a local it is read from (`weight[w_idx]`)."""
    node = unparen(node)
    if node.type == "subscript_argument_list" and node.named_child_count == 1:
        node = unparen(node.named_children[0])
    if node.type == "identifier" and _single_def(fn, text(node)) is not None:
        node = unparen(_single_def(fn, text(node)))
    return node


def transposed_gathers(fn: Function) -> list[TransposedGather]:
    loops = _loop_vars(fn)
    if not loops:
        return []
    sources, taps = _positions(fn, loops)
    if not taps:
        return []
    acc = [a for a in accesses(fn) if not a.shared]
    inputs = set()
    for a in acc:
        if not a.store and not WEIGHT_LIKE.search(a.base):  # the input: read at a position a tap moves
            index = _index(fn, a.index)
            if fn.deps(index) & taps:
                inputs |= identifiers(index)
    doubled = []
    for s in sources:
        for b in walk(s):
            sides = [unparen(b.child_by_field_name("left")), unparen(b.child_by_field_name("right"))] \
                if _op(b) == "*" else []
            if len(sides) == 2 and any(_numeral(x, "2") for x in sides):
                pad = next((x for x in sides if x.type == "identifier" and PAD_LIKE.search(text(x))), None)
                if pad is not None:
                    doubled.append((b.start_byte, b.end_byte, text(pad)))
    out, seen = [], set()
    for a in acc:
        if a.store or not WEIGHT_LIKE.search(a.base):
            continue
        expr = _index(fn, a.index)
        if expr.start_byte in seen or not (identifiers(expr) & taps):
            continue
        seen.add(expr.start_byte)
        flips = []
        for b in walk(expr):
            tap = _flip(b, taps)
            if tap is not None and not any(s <= b.start_byte < e for s, e, _ in flips):
                node = _outer(b)
                flips.append((node.start_byte, node.end_byte, tap))
        swap, channels = _swap(fn, expr, taps, inputs)
        if flips or doubled or swap:
            out.append(TransposedGather(expr, tuple(sorted(taps)), tuple(flips), tuple(doubled), swap, channels))
    return out


def _fact(tag: str, fn: Function, node: Node, message: str) -> Fact:
    return Fact(tag, message, fn.unit.pyline(node), "cuda", fn.name)


def transposed_facts(fn: Function) -> list[Fact]:
    out = []
    for g in transposed_gathers(fn)[:1]:
        if g.flips or g.doubled:
            what = []
            if g.flips:
                what.append(f"the weight index reads the flipped tap ({', '.join(t for *_, t in g.flips)}: K - 1 - k) "
                            f"while the input position subtracts it")
            if g.doubled:
                what.append("the input position adds 2 * padding")
            out.append(_fact("cuda_transposed_taps_flipped", fn, g.weight,
                             f"{fn.name} computes a transposed convolution as a gather, but " + " and ".join(what)
                             + ": the convolution-equivalent rewrite's conventions in the direct form"))
        if g.swap:
            oc, ic = g.channels
            index = " ".join(text(g.weight).split())[:120]
            out.append(_fact("cuda_transposed_weight_out_major", fn, g.weight,
                             f"{fn.name} reads the weight at {index}: "
                             f"output channel {oc} strided by the input-channel count, a convolution's (out, in, "
                             f"k...) layout; ConvTranspose holds (in, out / groups, k...)"))
    return out


__all__ = ["TransposedGather", "transposed_facts", "transposed_gathers"]


_SIZE0 = re.compile(r"^(\w+)(?:\.size\(0\)|\.sizes\(\)\[0\]|\[0\])$")


def host_out_count_edits(unit) -> list[UnitEdit]:
    """Host code that reads the output-channel count from the weight's first dimension (`int
    out_channels = weight.size(0);`, `weight_sizes[0]` of `weight.sizes()`): a convolution's (out, in,
    k...) layout. Read from the second (times the groups where the host has them) for a weight held as
    ConvTranspose's (in, out / groups, k...)."""
    edits = []
    for fn in unit.hosts:
        groups = next((n for n in sorted(fn.declared) + [p.name for p in fn.params] if GROUPS_LIKE.match(n)), None)
        for d in fn.nodes("init_declarator"):
            name, value = d.child_by_field_name("declarator"), d.child_by_field_name("value")
            if name is None or value is None or name.type != "identifier" or not OUT_COUNT.match(text(name)):
                continue
            m = _SIZE0.match(re.sub(r"\s+", "", text(value)))
            if m is None:
                continue
            base = m.group(1)
            if not WEIGHT_LIKE.search(base):
                sizes = _single_def(fn, base)
                if sizes is None or not re.match(r"^\w+\.sizes\(\)$", re.sub(r"\s+", "", text(sizes))) or \
                        not WEIGHT_LIKE.search(text(sizes).split(".")[0]):
                    continue
            zero = next((n for n in walk(value) if n.type == "number_literal" and text(n) == "0"), None)
            if zero is None:
                continue
            edits.append((zero.start_byte, zero.end_byte, "1"))
            if groups:
                edits.append((value.end_byte, value.end_byte, f" * {groups}"))
    return edits
