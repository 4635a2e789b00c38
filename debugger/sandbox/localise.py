"""Localisation across kernels, on the reference side of the sandbox.

When a candidate launches several kernels, each launch's written buffers (captured by the candidate
worker's LaunchRecorder) are matched against what the reference computes on the same inputs: the
output of every aten op in its float64 forward, its inputs, and row/column statistics of those
(max, min, sum, mean, variance, log-sum-exp, sum of exp(x - max)) that a multi-pass kernel commonly
keeps. The first launch whose buffer can be compared with a reference quantity of the same size
but matches none of them is where the computation departs: the repair should target that kernel.
"""
from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode

MAX_INTERMEDIATES = 400
MAX_ELEMENTS = 1 << 24
MAX_BYTES = 512 << 20  # float64 copies kept per check, all intermediates together


class IntermediateRecorder(TorchDispatchMode):
    """Keep (op name, float64 copy) of every floating-point tensor an op returns."""

    def __init__(self):
        super().__init__()
        self.tensors: list[tuple[str, torch.Tensor]] = []
        self.bytes = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", str(func))
        outs = out if isinstance(out, (tuple, list)) else [out]
        for o in outs:
            if (isinstance(o, torch.Tensor) and o.is_floating_point() and 0 < o.numel() <= MAX_ELEMENTS
                    and len(self.tensors) < MAX_INTERMEDIATES and self.bytes + 8 * o.numel() <= MAX_BYTES
                    and not name.startswith(("empty", "new_empty"))):
                with torch.utils._python_dispatch._disable_current_modes():
                    self.tensors.append((f"aten.{name.split('.')[0]}", o.detach().to(torch.float64).clone()))
                self.bytes += 8 * o.numel()
        return out


def _statistics(name: str, t: torch.Tensor, numel: int):
    """Reductions of t over one dimension whose result has `numel` elements."""
    if t.dim() < 2:
        if numel == 1:
            yield f"sum({name})", t.sum().reshape(1)
            yield f"max({name})", t.amax().reshape(1)
            yield f"mean({name})", t.mean().reshape(1)
        return
    for d in range(t.dim()):
        if t.numel() // t.shape[d] != numel:
            continue
        where = f"{name} over dim {d}"
        mx = t.amax(d, keepdim=True)
        yield f"row max of {where}", mx.squeeze(d)
        yield f"row min of {where}", t.amin(d)
        yield f"row sum of {where}", t.sum(d)
        yield f"row mean of {where}", t.mean(d)
        yield f"row variance of {where}", t.var(d, unbiased=False)
        shifted = torch.exp(t - mx).sum(d)
        yield f"sum of exp(x - max) of {where}", shifted
        yield f"log-sum-exp of {where}", torch.log(shifted) + mx.squeeze(d)


def _views(c: torch.Tensor, r: torch.Tensor):
    """The candidate buffer laid out like r: flat, or transposed when both are matrices."""
    yield "", c.reshape(-1), r.reshape(-1)
    if c.dim() == 2 and r.dim() == 2 and c.shape == r.shape[::-1] and c.shape[0] != c.shape[1]:
        yield " (transposed)", c.t().reshape(-1), r.reshape(-1)


def _compare(c: torch.Tensor, r: torch.Tensor, rtol: float) -> tuple[float, float, float]:
    """(fraction of elements off, max abs error, that error relative to r's magnitude), with a
    tolerance scaled to r's magnitude."""
    finite_r = r[torch.isfinite(r)]
    scale = float(finite_r.abs().max()) if finite_r.numel() else 1.0
    atol = rtol * max(1.0, scale)
    diff = (c - r).abs()
    bad = ~(diff <= atol + rtol * r.abs())
    bad &= ~((torch.isnan(c) & torch.isnan(r)) | (torch.isinf(c) & (c == r)))
    finite = diff[torch.isfinite(diff)]
    err = float(finite.max()) if finite.numel() else float("inf")
    return float(bad.float().mean()), err, err / max(scale, 1e-30)


def _quantities(intermediates: list[tuple[str, torch.Tensor]], n: int):
    """Every reference quantity with n elements: intermediates themselves, and their statistics."""
    for name, r in intermediates:
        if r.numel() == n:
            yield name, r
        elif r.numel() > n:
            yield from ((label, q) for label, q in _statistics(name, r, n) if q.numel() == n)


def _best_match(c: torch.Tensor, intermediates: list[tuple[str, torch.Tensor]], rtol: float) -> dict | None:
    """The reference quantity closest to the buffer c (the first exact match, when there is one)."""
    best = None
    for label, q in _quantities(intermediates, c.numel()):
        for suffix, cv, rv in _views(c, q):
            frac, err, rel = _compare(cv, rv, rtol)
            if best is None or (frac, rel) < (best["frac_wrong"], best["rel_err"]):
                best = {"quantity": label + suffix, "frac_wrong": frac, "max_abs_err": err, "rel_err": rel}
            if frac == 0.0:
                return best
    return best


def localise(intermediates: list[tuple[str, torch.Tensor]], writes: list[dict], tensors: list) -> dict:
    """Judge each written buffer, in launch order, against the reference quantities of its size."""
    judged = []
    # the reference's intermediates stay where its forward ran; a candidate buffer may arrive elsewhere
    # (an extension call's writes are kept on the host)
    device = intermediates[0][1].device if intermediates else None
    for meta, t in zip(writes, tensors):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point() or t.numel() == 0:
            continue
        c = t.to(device=device or t.device, dtype=torch.float64)
        low = t.dtype in (torch.float16, torch.bfloat16)
        rtol = 2e-2 if low else 2e-3
        best = _best_match(c, intermediates, rtol)
        entry = {"launch": meta["launch"], "kernel": meta["kernel"], "arg": meta["arg"],
                 "shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""), "writers": meta.get("writers")}
        if best is None:
            entry["verdict"] = "unknown"
        else:
            entry["verdict"] = "matches" if best["frac_wrong"] == 0.0 else "departs"
            entry.update(best)
        judged.append(entry)
    judged.sort(key=lambda e: (e["launch"], e["arg"]))
    first = next((e for e in judged if e["verdict"] == "departs"), None)
    return {"buffers": judged, "kernels": list(dict.fromkeys(e["kernel"] for e in judged)), "first_departing": first,
            "summary": _summary(judged, first)}


def _summary(judged: list[dict], first: dict | None) -> str:
    if not judged:
        return "no kernel output could be captured"
    parts = []
    for e in judged:
        if e["verdict"] == "matches":
            what = f"matches the reference's {e.get('quantity')}"
        elif e["verdict"] == "departs":
            what = (f"departs from the reference (closest: {e.get('quantity')}, {e['frac_wrong']:.0%} of elements "
                    f"off, max abs error {e['max_abs_err']:.3g})")
        else:
            what = "has no reference quantity of its size"
        parts.append(f"launch {e['launch']} ({e['kernel']}) argument {e['arg']} {what}")
    head = (f"first departing kernel: {first['kernel']} (launch {first['launch']})" if first
            else "no captured kernel output departs from a derivable reference quantity")
    return head + "; " + "; ".join(parts)
