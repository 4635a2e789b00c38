"""What PyTorch computes during one forward, op by op: the record the integrity gate measures shares from.

`WorkLog.note` is called by the recording dispatch mode (hooks.PoisonAndRecord) for every aten op that
runs, outside the candidate's own Triton launches (the interpreter's own tensor copies are not the
candidate's PyTorch work) and other than the ops of a library the candidate registers itself. Each op
is kept with its input and output shapes, torch's own FLOP formula where torch has one (matmul, bmm,
addmm, convolution, attention: torch.utils.flop_counter), whether it ran inside a call into the
candidate's extension (ATen in its host code), and the outermost torch function it ran under (`via`,
named by `TopLevelCalls`: F.cross_entropy for the log_softmax and nll_loss it decomposes into), so that
a sub-operation is matched as the source wrote it. Identical ops are counted, not repeated. The parent
turns the log into families, shares and a verdict (debugger/integrity/work.py).
"""
from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode

MAX_ENTRIES = 400  # distinct (op, shapes) entries kept per forward; the rest are only counted
MAX_SHAPES = 4  # tensor operands kept per op
PYTORCH_NAMESPACES = {"aten", "prims", "quantized", "_quantized", "mkldnn", "mkl", "cudnn", "torchvision"}


def _shapes(values, limit: int = MAX_SHAPES) -> list[list[int]]:
    found = []
    stack = [values]
    while stack and len(found) < limit:
        v = stack.pop(0)
        if isinstance(v, torch.Tensor):
            found.append(list(v.shape))
        elif isinstance(v, (list, tuple)):
            stack[:0] = list(v)
        elif isinstance(v, dict):
            stack[:0] = list(v.values())
    return found


try:  # imported with the module, so the zygote's workers find it loaded
    from torch.utils.flop_counter import flop_registry as _FORMULAS
except Exception:  # noqa: BLE001 - without torch's formulas every op is counted by elements
    _FORMULAS = {}


def _span(t: torch.Tensor) -> tuple[int, int]:
    s = t.untyped_storage()
    return s.data_ptr(), s.data_ptr() + s.nbytes()


def _reads_only(args, written: list, inputs: list) -> bool:
    """Every tensor argument lies in storage a launch received and none in a forward input's."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if not tensors:
        return False
    with torch.utils._python_dispatch._disable_current_modes():
        spans = [_span(t) for t in tensors]
    hit = lambda span, ranges: any(s0 < span[1] and span[0] < s1 for s0, s1 in ranges)  # noqa: E731
    return all(hit(sp, written) and not hit(sp, inputs) for sp in spans)


class WorkLog:
    """Aten ops of one forward with shapes, counts and torch's FLOP formula where it has one."""

    def __init__(self, forward_inputs=()):
        self.entries: dict[tuple, dict] = {}
        self.dropped = 0
        self.via: str | None = None  # the outermost torch function running now (TopLevelCalls)
        self._formulas = _FORMULAS
        self._input_spans = [_span(t) for t in forward_inputs if isinstance(t, torch.Tensor)]

    def note(self, func, name: str, args, kwargs, out, in_extension: bool = False,
             written: list | None = None) -> None:
        """Log one op; `written`: storage ranges the candidate's launches received so far (then the entry
        says whether the op reads only what they wrote, not the forward's own inputs)."""
        if getattr(func, "namespace", "aten") not in PYTORCH_NAMESPACES:
            return  # an op of a library the candidate registers (torch.library.triton_op, TORCH_LIBRARY)
        inputs, outputs = _shapes([args, kwargs or {}]), _shapes(out)
        reads_kernel_output = bool(written) and _reads_only(args, written, self._input_spans)
        key = (name, str(inputs), str(outputs), in_extension, self.via, reads_kernel_output)
        entry = self.entries.get(key)
        if entry is not None:
            entry["count"] += 1
            return
        if len(self.entries) >= MAX_ENTRIES:
            self.dropped += 1
            return
        flops = None
        formula = self._formulas.get(getattr(func, "overloadpacket", None))
        if formula is not None:
            try:
                flops = int(formula(*args, **(kwargs or {}), out_val=out))
            except Exception:  # noqa: BLE001 - an op torch's formula does not take: counted by elements
                flops = None
        self.entries[key] = {"op": name, "inputs": inputs, "outputs": outputs, "flops": flops, "count": 1,
                             "in_extension": in_extension, "via": self.via,
                             "reads_kernel_output": reads_kernel_output}

    def to_dict(self, forward_inputs=(), forward_outputs=()) -> dict:
        """The log as JSON, with the shapes of the operator's own inputs and outputs."""
        return {"ops": list(self.entries.values()), "dropped": self.dropped,
                "operator_inputs": _shapes(list(forward_inputs), 64),
                "operator_outputs": _shapes(list(forward_outputs), 64)}


class TopLevelCalls(TorchFunctionMode):
    """Names, in `log.via`, the outermost torch function (F.linear, F.cross_entropy, Tensor.__matmul__,
    nn.functional.multi_head_attention_forward) while it runs; nested calls keep the outer name."""

    def __init__(self, log: WorkLog):
        super().__init__()
        self.log = log

    def __torch_function__(self, func, types, args=(), kwargs=None):
        outer = self.log.via is None
        if outer:
            self.log.via = str(getattr(func, "__name__", "") or "") or None
        try:
            return func(*args, **(kwargs or {}))
        finally:
            if outer:
                self.log.via = None
