"""How much of each poisoned buffer a kernel launch received did its kernels write, measured on the run.

The candidate's allocations are filled with a poison (hooks.PoisonAndRecord); a scratch buffer that a
launch receives and that is not one of the forward's outputs keeps the poison wherever no store reached
it. After the forward, counting the elements still poisoned gives the same fact the probes give on
the interpreter ({"kernel", "arg", "elements", "stored"}, debugger/diagnose/rewrite.py reads it), on
any device: on a GPU machine whose own Triton interpreter cannot run the kernel (Triton 3.6 raises on
`for i in range(n)` over a runtime argument) the probes have nothing to say, this still has.

Only floating buffers count (NaN is the poison there, and a kernel's own NaN is rare); a buffer is
held from its first launch to the end of the forward, up to HELD_BYTES in all, so a large
intermediate the candidate frees early is not kept past that budget.
"""
from __future__ import annotations

import math
import weakref

import torch

HELD_BYTES = 256 << 20


class BufferCoverage:
    """Poisoned floating allocations, the launches that received them, and what stayed poisoned."""

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self._allocated: dict[int, tuple[weakref.ref, float]] = {}  # data_ptr -> (tensor, poison)
        self._held: list[dict] = []  # {"kernel", "arg", "tensor", "poison"}
        self._held_bytes = 0

    def note_alloc(self, t: torch.Tensor, poison: float) -> None:
        if t.is_floating_point() and t.numel() and t.is_contiguous():
            self._allocated[t.data_ptr()] = (weakref.ref(t), poison)

    def note_launch(self, kernel: str, args) -> None:
        """A launch received `args` (its positional arguments): hold the poisoned allocations among them."""
        for i, a in enumerate(args):
            if not isinstance(a, torch.Tensor):
                continue
            entry = self._allocated.pop(a.data_ptr(), None)
            t = entry[0]() if entry else None
            if t is None:
                continue
            size = t.numel() * t.element_size()
            if self._held_bytes + size > HELD_BYTES:
                continue
            self._held_bytes += size
            self._held.append({"kernel": kernel, "arg": i, "tensor": t, "poison": entry[1]})

    def measure(self, is_output) -> list[dict]:
        """Each held buffer that is not an output (`is_output(tensor)`: shares storage with one) and kept some
        poison: elements and how many were stored."""
        found = []
        for h in self._held:
            t = h["tensor"]
            if is_output(t):
                continue  # the error maps see an output's coverage
            with torch.no_grad():
                poisoned = int((torch.isnan(t) if math.isnan(h["poison"]) else t == h["poison"]).sum())
            if poisoned:
                found.append({"kernel": h["kernel"], "arg": h["arg"], "elements": t.numel(),
                              "stored": t.numel() - poisoned, "measured": "run"})
        return found
