"""PyTorch's share of the operator's work, measured on the run, and what each policy makes of it.

The candidate worker logs every aten op of ModelNew.forward that runs outside its own Triton launches
(ATen in its extension's host code included) with shapes and, for matmul/conv/attention, torch's own
FLOP formula (debugger/sandbox/work.py); the reference worker logs Model.forward on the same inputs.
Here each op gets a family (ops.py's, from its aten name) and a FLOP estimate (the formula, or its
elements times a small per-family factor), and is judged against the operator's own inputs and
outputs:
- glue: allocations, views, casts, copies, data movement (no work);
- small: any op over data much smaller than the operator's and a small share of the reference's
  work (a sum of per-block partials, a mean of per-row losses), and a reduction or arithmetic that
  reads only what the candidate's launches wrote where the reference too ends in a loss or in a
  reduction of what it computed (MSE's mean of squared differences a kernel produced): light;
- heavy: a convolution, matmul, normalisation, softmax, reduction, loss or pool over the operator's
  data or with a real share of its work.
The share is PyTorch's FLOPs over the reference's. Policy: strict rejects any heavy op and a share of
STRICT_SHARE or more in ops that are not light; kernelbench lets a heavy op stay in PyTorch where it is a sub-operation of the
reference and rejects a heavy op the reference does not run (a piece of an operation the candidate
claims: a norm's statistics) once such pieces reach SMALL_SHARE of the reference's work, and PyTorch running
every op of the reference. Under both, a forward that
launches none of the candidate's own kernels while PyTorch computes is rejected.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from debugger.integrity import ops
from debugger.integrity.findings import REJECT, WARN, Finding
from debugger.integrity.policy import KERNELBENCH

STRICT_SHARE = 0.15  # strict: PyTorch doing this share of the reference's work or more rejects
SMALL_SHARE = 0.05  # an op below this share of the reference's work ...
SMALL_DATA = 8  # ... over data at least this many times smaller than the operator's is light
TOP = 8  # ops shown in the report

# Elements-to-FLOPs factors of the families torch has no formula for.
_FACTOR = {"norm": 5, "softmax": 5, "loss": 3, "matmul": 2, "conv": 2, "attention": 4, "recurrent": 8}
_PREFIXES = ("native_", "cudnn_", "mkldnn_", "miopen_", "slow_", "linalg_", "special_", "fused_", "thnn_")
_SUFFIXES = ("_legit", "_no_training", "_functional", "_forward", "_with_indices", "_backward", "_out",
             "_nd", "_default", "_int", "_tensor", "_scalar", "_2d", "_3d")
_CONTAINS = (("attention", "attention"), ("conv", "conv"), ("softmax", "softmax"), ("norm", "norm"),
             ("pool", "pool"), ("upsample", "resample"), ("loss", "loss"), ("mm", "matmul"), ("lstm", "recurrent"),
             ("gru", "recurrent"), ("rnn", "recurrent"))
# aten names that do no arithmetic: allocation, random draws, views, casts, copies, metadata.
_GLUE = (ops.GLUE_FUNCTIONS | ops.VIEW_METHODS | ops.META_METHODS | ops.INPLACE_GLUE | ops.ALLOCATORS | set(
    "alias lift lift_fresh lift_fresh_copy _to_copy to_copy copy _copy_from _copy_from_and_resize _unsafe_view "
    "unsafe_view _reshape_alias reshape_alias view_copy as_strided_copy expand_copy permute_copy t_copy "
    "transpose_copy slice slice_copy select_copy split_with_sizes split_copy unbind_copy squeeze_copy "
    "unsqueeze_copy resize resize_as empty_permuted new_empty_strided local_scalar_dense is_nonzero fill zero "
    "uniform normal bernoulli random exponential geometric cauchy log_normal randperm rand randn randint "
    "sym_size sym_stride sym_numel sym_storage_offset set detach_copy clone contiguous record_stream "
    "assert_async assert_tensor_metadata functional_assert_async dim size stride getitem setitem index index_put "
    "unsafe_index unsafe_index_put".split()))


def aten_base(name: str) -> str:
    """The op's name without overload, underscores, backend prefixes and variant suffixes:
    `_native_batch_norm_legit_no_training.default` -> `batch_norm`."""
    base = name.split(".")[0].strip("_")
    changed = True
    while changed:
        changed = False
        for p in _PREFIXES:
            if base.startswith(p) and len(base) > len(p):
                base, changed = base[len(p):], True
        for s in _SUFFIXES:
            if base.endswith(s) and len(base) > len(s):
                base, changed = base[: -len(s)], True
    return base.strip("_")


def aten_family(name: str) -> str | None:
    """The compute family of an aten op (ops.py's families), None for glue and data movement."""
    base = aten_base(name)
    if base in _GLUE or name.split(".")[0].strip("_") in _GLUE:
        return None
    family = ops.OP_FAMILY.get(base)
    if family is None:
        family = next((f for part, f in _CONTAINS if part in base), "other")
    return None if family == "movement" else family


def _numel(shape: list[int]) -> int:
    return math.prod(shape) if shape else 1


def op_flops(entry: dict, family: str) -> int:
    """FLOPs of one call: torch's formula where it had one, else elements times the family's factor."""
    if entry.get("flops") is not None:
        return int(entry["flops"])
    elements = max([_numel(s) for s in entry.get("inputs", []) + entry.get("outputs", [])] or [1])
    if family == "sort":
        last = max((s[-1] for s in entry.get("inputs", []) if s), default=2)
        return elements * max(1, math.ceil(math.log2(max(last, 2))))
    return elements * _FACTOR.get(family, 1)


def _key(family: str, name: str, via: str | None = None) -> str:
    """One sub-operation as the source wrote it, as compute.ComputeSite.key: the torch function the op ran
    under where that computes (F.cross_entropy for its log_softmax), else the op itself; the family for
    substantial families, the name for elementwise work."""
    outer = aten_family(via) if via else None
    if outer is not None:
        family, name = outer, via
    return family if ops.FAMILY_WEIGHT[family] >= 2 else ops.canonical_op(aten_base(name))


@dataclass
class MeasuredOp:
    """One aten op of a forward (all its calls with these shapes), judged."""

    op: str
    family: str
    flops: int
    count: int
    inputs: list
    outputs: list
    in_extension: bool
    via: str | None = None
    reads_kernel_output: bool = False  # every operand is storage the candidate's launches wrote
    small: bool = False  # over data much smaller than the operator's, a small share of its work
    finishing: bool = False  # the last reduction of what the kernels wrote, as the reference ends
    heavy: bool = False

    @property
    def light(self) -> bool:
        return self.small or self.finishing

    @property
    def key(self) -> str:
        return _key(self.family, self.op, self.via)

    @property
    def weight(self) -> str:
        """heavy, light (small or finishing) or elementwise (counted in strict's share)."""
        return "heavy" if self.heavy else "light" if self.light else "elementwise"

    def to_dict(self, reference_flops: int) -> dict:
        share = self.flops / reference_flops if reference_flops else None
        return {"op": self.op, "family": self.family, "calls": self.count, "flops": self.flops,
                "share": round(share, 4) if share is not None else None, "inputs": self.inputs,
                "outputs": self.outputs, "weight": self.weight, "via": self.via,
                **({"in_extension": True} if self.in_extension else {})}


@dataclass
class Measurement:
    """PyTorch's work in the candidate's forward against the reference's."""

    ops: list[MeasuredOp]
    reference_flops: int
    reference_keys: Counter = field(default_factory=Counter)
    operator_elements: int = 1
    launches: int = 0

    @property
    def torch_flops(self) -> int:
        return sum(o.flops for o in self.ops)

    @property
    def share(self) -> float | None:
        """PyTorch's FLOPs over the reference's (None when the reference measured none)."""
        return self.torch_flops / self.reference_flops if self.reference_flops else None

    @property
    def not_light_share(self) -> float | None:
        """The share of the ops that are not light (small, or finishing what the kernels wrote)."""
        if not self.reference_flops:
            return None
        return sum(o.flops for o in self.ops if not o.light) / self.reference_flops

    @property
    def heavy(self) -> list[MeasuredOp]:
        return [o for o in self.ops if o.heavy]

    def covers_reference(self) -> bool:
        """PyTorch ran every sub-operation of the reference, each as often as the reference did, over data
        of the operator's size (finishing included: PyTorch redoing all of it on a kernel's copies)."""
        if not self.reference_keys:
            return False
        mine = Counter()
        for o in self.ops:
            if not o.small:
                mine[o.key] += o.count
        return all(mine[k] >= n for k, n in self.reference_keys.items())

    def top(self, n: int = TOP) -> list[MeasuredOp]:
        return sorted(self.ops, key=lambda o: -o.flops)[:n]

    def summary(self) -> dict:
        """The report's view: the share, both FLOP totals and the top ops."""
        share, counted = self.share, self.not_light_share
        return {"share": round(share, 4) if share is not None else None,
                "not_light_share": round(counted, 4) if counted is not None else None,
                "torch_flops": self.torch_flops,
                "reference_flops": self.reference_flops, "candidate_launches": self.launches,
                "ops": [o.to_dict(self.reference_flops) for o in self.top()],
                "more_ops": max(0, len(self.ops) - TOP)}

    def describe(self, n: int = 3) -> str:
        """One line: the share and the top ops."""
        share = self.share
        head = f"PyTorch did {100 * share:.1f}% of the reference's FLOPs" if share is not None else \
            f"PyTorch did {self.torch_flops} FLOPs"
        tops = ", ".join(f"{o.op} {o.inputs[:2]} ({o.weight})" for o in self.top(n))
        return head + (f" ({tops})" if tops else "")


def _ops(work: dict | None) -> list[MeasuredOp]:
    found = []
    for e in (work or {}).get("ops", []):
        family = aten_family(e["op"])
        if family is None:
            continue
        found.append(MeasuredOp(e["op"], family, op_flops(e, family) * e.get("count", 1), e.get("count", 1),
                                e.get("inputs", []), e.get("outputs", []), bool(e.get("in_extension")),
                                e.get("via"), bool(e.get("reads_kernel_output"))))
    return found


def reduces_last(reference: list[MeasuredOp]) -> bool:
    """The reference ends in a loss, or in a reduction of something it computed first (MSE's mean of
    squared differences; checks/compute.py's rule on the source), scalar arithmetic after it aside: a
    kernel may do the rest and leave that last reduction of its own results to PyTorch."""
    body = list(reference)
    while body and all(_numel(s) <= 1 for s in body[-1].inputs + body[-1].outputs):
        body.pop()  # arithmetic on the result's scalar: batchmean's division of kl_div's sum
    if not body:
        return False
    last = body[-1].family
    return last == "loss" or last == "reduction" and any(o.family != "reduction" for o in body)


def measure(candidate_work: dict | None, reference_work: dict | None, launches: int = 0) -> Measurement | None:
    """The measurement of one check's forward (None without the candidate's log)."""
    if candidate_work is None:
        return None
    reference = _ops(reference_work)
    reference_flops = sum(o.flops for o in reference)
    shapes = (candidate_work.get("operator_inputs", []) + candidate_work.get("operator_outputs", [])) or \
        ((reference_work or {}).get("operator_inputs", []) + (reference_work or {}).get("operator_outputs", []))
    elements = max([_numel(s) for s in shapes] or [1])
    mine = _ops(candidate_work)
    finishing = reduces_last(reference)
    for o in mine:
        largest = max([_numel(s) for s in o.inputs + o.outputs] or [1])
        share = o.flops / reference_flops if reference_flops else 1.0
        o.small = largest * SMALL_DATA <= elements and share < SMALL_SHARE
        o.finishing = finishing and o.reads_kernel_output and o.family in ops.FINISHING
        o.heavy = ops.FAMILY_WEIGHT[o.family] >= 2 and not o.light
    keys = Counter()
    for o in reference:
        keys[o.key] += o.count
    return Measurement(mine, reference_flops, keys, elements, launches)


def judge(m: Measurement, policy: str) -> list[Finding]:
    """Findings of the measured share under the policy (see the module docstring)."""
    if not m.launches and m.ops:
        return [Finding("torch_does_every_op", REJECT, f"no kernel of the candidate ran during forward while PyTorch "
                                                       f"computed: {m.describe()}")]
    found = []
    if m.covers_reference():
        keys = ", ".join(sorted(m.reference_keys))
        found.append(Finding("torch_does_every_op", REJECT, f"PyTorch ran every operation of the reference ({keys}) "
                                                            f"during forward: the kernels do no real part of it; "
                                                            f"{m.describe()}"))
    pieces = [o for o in m.heavy if o.key not in m.reference_keys]
    pieces_share = sum(o.flops for o in pieces) / m.reference_flops if m.reference_flops else 1.0
    for o in m.heavy:
        what = f"measured: {o.op} ({o.family}) on {o.inputs[:2]}, {100 * o.flops / max(m.reference_flops, 1):.1f}% " \
               f"of the reference's FLOPs"
        if policy == KERNELBENCH and o.key in m.reference_keys:
            found.append(Finding("torch_compute", WARN, what + ": a sub-operation of the reference kept in PyTorch "
                                                               "(allowed by --policy kernelbench)"))
        elif policy == KERNELBENCH and pieces_share < SMALL_SHARE:
            # a norm's statistics inside a network whose convolutions carry the work: the kernels still do a real part
            found.append(Finding("torch_compute", WARN, what + f": a piece of an operation the candidate claims, but "
                                                               f"all such pieces are {100 * pieces_share:.1f}% of the "
                                                               f"reference's work (under {100 * SMALL_SHARE:.0f}%)"))
        elif policy == KERNELBENCH:
            found.append(Finding("torch_compute", REJECT, what + ": a substantial computation the reference does "
                                                                 "not run as an op of its own (a piece of an "
                                                                 "operation the candidate claims)"))
        else:
            found.append(Finding("torch_compute", REJECT, what + ": the operator's heavy part must be in the "
                                                                 "candidate's kernels (--policy strict)"))
    share = m.not_light_share
    if policy != KERNELBENCH and not m.heavy and share is not None and share >= STRICT_SHARE:
        found.append(Finding("torch_compute", REJECT, f"measured: {m.describe()}: a large share of the operator's "
                                                      f"work (--policy strict allows under {100 * STRICT_SHARE:.0f}%)"))
    if m.ops and not any(f.severity == REJECT for f in found):
        found.append(Finding("torch_share", WARN, f"measured: {m.describe()}"))
    return found


def work_text(summary: dict) -> str:
    """The text report's lines for a Measurement.summary(): the share, then the top ops."""
    share = summary.get("share")
    head = (f"PyTorch's share of the work: {100 * share:.1f}%" if share is not None else
            "PyTorch's share of the work: the reference measured no FLOPs")
    lines = [f"{head} ({summary['torch_flops']:.3g} of the reference's {summary['reference_flops']:.3g} FLOPs; "
             f"launches of the candidate's own kernels: {summary.get('candidate_launches', 0)})"]
    for o in summary.get("ops", []):
        where = " in extension host code" if o.get("in_extension") else ""
        pct = f" ({100 * o['share']:.1f}%)" if o.get("share") is not None else ""
        lines.append(f"  {o['weight']:<11} {o['op']:<28} x{o['calls']:<4} {o['inputs'][:3]} -> {o['outputs'][:2]} "
                     f"{o['flops']:.3g} FLOPs{pct}{where}")
    if summary.get("more_ops"):
        lines.append(f"  ... and {summary['more_ops']} more ops")
    return "\n".join(lines)
