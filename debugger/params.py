"""Parameter correspondence: which tensor of ModelNew holds which tensor of Model.

Real answers rarely keep the reference's attribute names: `self.weight = nn.Parameter(...)` where the
reference has `self.gemm = nn.Linear(...)`, a plain tensor attribute where the reference registers a
buffer. Tensors are matched by full name first (same shape), then by identical values (the same
tensor drawn under the same seed, whatever its name, unless another tensor of that shape carries nearly
the candidate's name: draws in another order can make two roles' values equal), then by creation order
and shape: each
unmatched candidate tensor, in the order the constructor made it, takes the first unmatched reference
tensor of the same shape and kind; last, a tensor whose first two dimensions are the reference's swapped
(a ConvTranspose weight, (in, out, k...), held in a convolution's (out, in, k...) layout, a Linear
weight held as (in, out) for `x @ W`) takes the reference's values transposed, and one whose shape differs
only by size-1 dimensions (a bias held as (1,) for the reference's (1, 1, 1): the same draws under the
seed) takes them reshaped. Creation order is
recorded while the model is built (every parameter, buffer or tensor attribute assigned to any module,
in sequence), because state_dict order lists a module's own parameters before its children's, which is
not the order the RNG was drawn in.

The mapping serves three things: copying the reference's values into ModelNew (the kernel verdict),
carrying re-drawn parameters over (params_redrawn), and proving parameter_init (the candidate's own
initialisation under the same seed differs from the reference's for these tensors).
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

import torch


@dataclass
class NamedTensor:
    """One tensor a module holds: full dotted name, what registered it, and the tensor."""

    name: str
    kind: str  # parameter | buffer | attribute
    tensor: torch.Tensor

    @property
    def shape(self) -> list[int]:
        return list(self.tensor.shape)

    @property
    def floating(self) -> bool:
        return self.tensor.is_floating_point()


@dataclass
class Pair:
    candidate: str
    reference: str
    shape: list[int]
    by: str  # name | value | order | transposed (dims 0 and 1 of the reference tensor swapped) | reshaped
    own_init_diff: float | None = None  # max |candidate's own init - reference| (None: not measured)


@dataclass
class ParameterMap:
    """The correspondence, and what stayed unmatched on either side."""

    pairs: list[Pair] = field(default_factory=list)
    unmatched_candidate: list[str] = field(default_factory=list)
    unmatched_reference: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"pairs": [asdict(p) for p in self.pairs], "unmatched_candidate": list(self.unmatched_candidate),
                "unmatched_reference": list(self.unmatched_reference)}

    def differing(self, tol: float = 0.0) -> list[Pair]:
        """Pairs whose own initialisation differs from the reference's (parameter_init evidence)."""
        return [p for p in self.pairs if p.own_init_diff is not None and p.own_init_diff > tol]


class CreationOrder:
    """Records the sequence in which tensors are attached to modules while a model is built."""

    def __init__(self):
        self.seen: dict[int, int] = {}

    def note(self, value) -> None:
        if isinstance(value, torch.Tensor) and id(value) not in self.seen:
            self.seen[id(value)] = len(self.seen)

    def rank(self, t: torch.Tensor) -> int:
        return self.seen.get(id(t), len(self.seen) + 1)


@contextmanager
def recording_creation_order():
    """Within this block, every tensor assigned to a module (any way) is noted in order."""
    order = CreationOrder()
    module_cls = torch.nn.Module
    originals = (module_cls.__setattr__, module_cls.register_buffer, module_cls.register_parameter)

    def setattr_(self, name, value, __orig=originals[0]):
        order.note(value)
        return __orig(self, name, value)

    def register_buffer(self, name, tensor, *args, __orig=originals[1], **kwargs):
        order.note(tensor)
        return __orig(self, name, tensor, *args, **kwargs)

    def register_parameter(self, name, param, __orig=originals[2]):
        order.note(param)
        return __orig(self, name, param)

    module_cls.__setattr__, module_cls.register_buffer, module_cls.register_parameter = \
        setattr_, register_buffer, register_parameter
    try:
        yield order
    finally:
        module_cls.__setattr__, module_cls.register_buffer, module_cls.register_parameter = originals


def named_tensors(model: torch.nn.Module, order: CreationOrder | None = None) -> list[NamedTensor]:
    """Every parameter, buffer and plain tensor attribute of the model, in creation order when known."""
    found: list[NamedTensor] = []
    seen: set[int] = set()
    for prefix, module in model.named_modules(remove_duplicate=True):
        dot = f"{prefix}." if prefix else ""
        groups = (("parameter", module._parameters.items()), ("buffer", module._buffers.items()),
                  ("attribute", ((k, v) for k, v in vars(module).items()
                                 if isinstance(v, torch.Tensor) and not k.startswith("_"))))
        for kind, items in groups:
            for name, t in items:
                if t is None or id(t) in seen:
                    continue
                seen.add(id(t))
                found.append(NamedTensor(dot + name, kind, t))
    if order is not None:
        position = {id(nt): i for i, nt in enumerate(found)}
        found.sort(key=lambda nt: (order.rank(nt.tensor), position[id(nt)]))
    return found


def correspond(reference: list[NamedTensor], candidate: list[NamedTensor]) -> ParameterMap:
    """Match candidate tensors to reference tensors: by name, identical values, then creation order."""
    result = ParameterMap()
    ref_left = list(reference)
    by_name = {r.name: r for r in reference}
    matched: dict[str, tuple[NamedTensor, str]] = {}
    for c in candidate:
        r = by_name.get(c.name)
        if r is not None and r.shape == c.shape and r.floating == c.floating:
            matched[c.name] = (r, "name")
            ref_left.remove(r)
    for c in candidate:  # identical values under the same seed: the same tensor, whatever its name
        if c.name in matched:
            continue
        same = [r for r in ref_left if r.shape == c.shape and r.floating == c.floating and r.tensor.numel() > 1
                and r.tensor.dtype == c.tensor.dtype and torch.equal(r.tensor.detach(), c.tensor.detach())]
        if len(same) == 1 and not _name_contradicts(c, same[0], ref_left):
            matched[c.name] = (same[0], "value")
            ref_left.remove(same[0])
    for c in candidate:
        if c.name in matched:
            continue
        r = next((r for r in ref_left if r.shape == c.shape and r.floating == c.floating), None)
        if r is not None:
            matched[c.name] = (r, "order")
            ref_left.remove(r)
    for c in candidate:  # the reference's layout with its first two dimensions swapped
        if c.name in matched or len(c.shape) < 2 or c.shape[0] == c.shape[1]:
            continue
        swapped = [c.shape[1], c.shape[0], *c.shape[2:]]
        r = next((r for r in ref_left if r.shape == swapped and r.floating == c.floating), None)
        if r is not None:
            matched[c.name] = (r, "transposed")
            ref_left.remove(r)
    for c in candidate:  # the reference's elements held in a shape differing only by size-1 dimensions
        if c.name in matched:
            continue
        core = _without_ones(c.shape)
        named = by_name.get(c.name)
        pool = [r for r in ref_left if r is named] + ref_left  # its own name first, then creation order
        r = next((r for r in pool if _without_ones(r.shape) == core and r.floating == c.floating), None)
        if r is not None:
            matched[c.name] = (r, "reshaped")
            ref_left.remove(r)
    for c in candidate:
        if c.name in matched:
            r, how = matched[c.name]
            result.pairs.append(Pair(c.name, r.name, c.shape, how))
        else:
            result.unmatched_candidate.append(c.name)
    result.unmatched_reference = [r.name for r in ref_left]
    return result


def _name_tokens(name: str) -> set[str]:
    """The words and numbers of a tensor's name, plural and layer prefixes dropped: `weights_ih.1` and
    `gru.weight_ih_l1` give {weight, ih, 1} and {gru, weight, ih, 1}."""
    out = set()
    for t in re.findall(r"[a-z]+|\d+", name.lower()):
        t = t[:-2] if t.endswith("ses") else t
        t = t[:-1] if t.endswith("s") and len(t) > 3 else t
        if len(t) > 1 or t.isdigit():
            out.add(t)
    return out


def _affinity(c: NamedTensor, r: NamedTensor) -> float:
    words = _name_tokens(c.name)
    return len(words & _name_tokens(r.name)) / len(words) if words else 0.0


def _name_contradicts(c: NamedTensor, r: NamedTensor, ref_left: list[NamedTensor]) -> bool:
    """Identical values, but another reference tensor of the same shape has nearly the candidate's name.
    Under one seed a tensor drawn in another order can hold a different tensor's values: a GRU built as
    ParameterLists and initialised list by list draws `weights_ih.1` where nn.GRU draws `weight_hh_l0`."""
    mine = _affinity(c, r)
    return any(o is not r and o.shape == c.shape and o.floating == c.floating
               and _affinity(c, o) >= NAME_AFFINITY > mine for o in ref_left)


NAME_AFFINITY = 0.75


def _without_ones(shape) -> list[int]:
    return [d for d in shape if d != 1]


def in_candidate_layout(pair: Pair, tensor: torch.Tensor) -> torch.Tensor:
    """The reference tensor of a pair as the candidate holds it."""
    if pair.by == "transposed":
        return tensor.transpose(0, 1)
    return tensor.reshape(pair.shape) if pair.by == "reshaped" else tensor


def copy_values(mapping: ParameterMap, reference: list[NamedTensor], candidate: list[NamedTensor]) -> None:
    """Copy each matched reference tensor's values into its candidate tensor, in place."""
    ref_by = {r.name: r.tensor for r in reference}
    cand_by = {c.name: c.tensor for c in candidate}
    with torch.no_grad():
        for p in mapping.pairs:
            dst, src = cand_by[p.candidate], in_candidate_layout(p, ref_by[p.reference])
            dst.copy_(src.detach().to(device=dst.device, dtype=dst.dtype))


def measure_own_init(mapping: ParameterMap, reference: list[NamedTensor], candidate: list[NamedTensor]) -> None:
    """Record, per pair, how far the candidate's own initial values are from the reference's."""
    ref_by = {r.name: r.tensor for r in reference}
    cand_by = {c.name: c.tensor for c in candidate}
    with torch.no_grad():
        for p in mapping.pairs:
            a = cand_by[p.candidate].detach().double().cpu()
            b = in_candidate_layout(p, ref_by[p.reference]).detach().double().cpu()
            p.own_init_diff = float((a - b).abs().max()) if a.numel() else 0.0
