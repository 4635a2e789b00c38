"""Comparing a candidate's output with the reference's: tolerances, NaN/Inf patterns, error stats."""
from __future__ import annotations

import torch

# Per-dtype default tolerances (atol, rtol); case.toml and flags override.
DEFAULT_TOLERANCE = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-4, 1e-4),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (1e-2, 1e-2),
}
CUDA_FP32_TOLERANCE = (1e-3, 1e-3)  # tf32 in tl.dot is accepted by default on a GPU (README policy)
# KernelBench v0/v0.1 compares with torch.allclose(atol=rtol=1e-2) in every precision; the verdicts its
# published runs recorded use it (no recorded mismatch has a max difference under 1e-2).
KERNELBENCH_TOLERANCE = 1e-2


def default_tolerance(dtype: torch.dtype, device: str) -> tuple[float, float]:
    """Tolerances for an output dtype; integers and bools compare exactly."""
    if not dtype.is_floating_point:
        return (0.0, 0.0)
    if dtype == torch.float32 and device == "cuda":
        return CUDA_FP32_TOLERANCE
    return DEFAULT_TOLERANCE.get(dtype, (1e-4, 1e-4))


def wrong_mask(cand: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float,
               floor: torch.Tensor | None = None) -> torch.Tensor:
    """Elements where the candidate is wrong: beyond tolerance, or a NaN/Inf pattern mismatch.
    `floor` (per element, optional): an absolute error the element is never held below (the
    reference's own rounding error there, debugger/sandbox/noise.py)."""
    c = cand.double()
    r = ref.double()
    c_nan, r_nan = torch.isnan(c), torch.isnan(r)
    c_inf, r_inf = torch.isinf(c), torch.isinf(r)
    finite = ~(c_nan | r_nan | c_inf | r_inf)
    err = torch.where(finite, (c - r).abs(), torch.zeros((), dtype=c.dtype, device=c.device))
    tol = atol + rtol * r.abs()
    if floor is not None:
        tol = torch.maximum(tol, floor.to(device=tol.device, dtype=tol.dtype))
    bad = finite & (err > tol)
    bad |= c_nan ^ r_nan
    bad |= (c_inf | r_inf) & ~(c_nan | r_nan) & (c != r)
    return bad


def output_stats(index: int, cand, ref, ref_dtype: torch.dtype, atol: float, rtol: float,
                 floor: torch.Tensor | None = None) -> dict:
    """Stats of one output (a dict of OutputStats fields); `floor` as in wrong_mask."""
    if not isinstance(ref, torch.Tensor):
        ok = cand == ref
        return {"index": index, "shape": [], "dtype": type(ref).__name__, "passed": bool(ok),
                "problem": None if ok else f"value {cand!r}, expected {ref!r}"}
    base = {"index": index, "shape": list(ref.shape), "dtype": str(ref_dtype).replace("torch.", "")}
    if not isinstance(cand, torch.Tensor):
        return {**base, "passed": False, "problem": f"output {index} is {type(cand).__name__}, expected a tensor"}
    if tuple(cand.shape) != tuple(ref.shape):
        return {**base, "passed": False,
                "problem": f"output {index} has shape {list(cand.shape)}, expected {list(ref.shape)}"}
    if cand.dtype != ref_dtype:
        return {**base, "passed": False,
                "problem": f"output {index} has dtype {str(cand.dtype).replace('torch.', '')}, "
                           f"expected {base['dtype']}"}
    c = cand.to(ref.device).double()
    r = ref.double()
    bad = wrong_mask(c, r, atol, rtol, floor if floor is not None and floor.shape == r.shape else None)
    finite = torch.isfinite(c) & torch.isfinite(r)
    err = torch.where(finite, (c - r).abs(), torch.zeros((), dtype=torch.float64, device=c.device))
    rel = err / r.abs().clamp_min(max(atol, 1e-12))
    n_wrong = int(bad.sum())
    nan_mismatch = int((torch.isnan(c) ^ torch.isnan(r)).sum())
    inf_mismatch = int(((torch.isinf(c) | torch.isinf(r)) & (c != r) & ~torch.isnan(c) & ~torch.isnan(r)).sum())
    numel = max(1, r.numel())
    first = None
    if n_wrong:
        flat = int(torch.nonzero(bad.reshape(-1))[0])
        first = list(torch.unravel_index(torch.tensor(flat), tuple(r.shape))) if r.dim() else []
        first = [int(i) for i in first]
    max_abs = float(err.max()) if err.numel() else 0.0
    if nan_mismatch or inf_mismatch:
        max_abs = float("inf")
    return {**base, "passed": n_wrong == 0, "max_abs_err": max_abs,
            "max_rel_err": float(rel.max()) if rel.numel() else 0.0, "n_wrong": n_wrong,
            "frac_wrong": n_wrong / numel, "first_wrong": first, "nan_mismatch": nan_mismatch,
            "inf_mismatch": inf_mismatch}


def max_difference(a: list, b: list) -> float:
    """Largest elementwise |a - b| over two output lists (NaN-aware: same NaNs count as equal)."""
    worst = 0.0
    for x, y in zip(a, b):
        if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
            worst = max(worst, 0.0 if x == y else float("inf"))
            continue
        if x.shape != y.shape:
            return float("inf")
        y = y.to(x.device)
        # Equal tensors (the usual answer: inputs left alone, a deterministic rerun) need no float64
        # copies, which for 2^31 int8 elements are 17 GB each; integers differ exactly, in int64.
        if x.dtype == y.dtype and torch.equal(x, y):
            continue
        if not x.is_floating_point() and not y.is_floating_point() and not x.is_complex() and not y.is_complex():
            d = (x.long() - y.long()).abs()
            if d.numel():
                worst = max(worst, float(d.max()))
            continue
        xd, yd = x.double(), y.double()
        same_nan = torch.isnan(xd) & torch.isnan(yd)
        if bool(((torch.isnan(xd) | torch.isnan(yd)) & ~same_nan).any()):
            return float("inf")
        d = torch.where(same_nan | (xd == yd), torch.zeros_like(xd), (xd - yd).abs())
        if d.numel():
            worst = max(worst, float(d.max()))
    return worst


def kernelbench_stats(index: int, cand, native, tolerance: float) -> dict:
    """Stats of one output judged as KernelBench judges it: shape, then torch.allclose with the
    native reference output (atol = rtol = tolerance, NaN never close), whatever the dtype."""
    if not isinstance(native, torch.Tensor) or not isinstance(cand, torch.Tensor) \
            or tuple(cand.shape) != tuple(native.shape):
        return output_stats(index, cand, native, getattr(native, "dtype", torch.float64), tolerance, tolerance)
    c = cand.to(native.device)
    stats = output_stats(index, c.to(native.dtype), native, native.dtype, tolerance, tolerance)
    try:
        close = bool(torch.allclose(native, c.to(native.dtype), atol=tolerance, rtol=tolerance))
    except RuntimeError as e:
        return {**stats, "passed": False, "problem": f"torch.allclose failed: {str(e)[:200]}"}
    if cand.dtype != native.dtype:
        close = False
        stats["problem"] = (f"output {index} has dtype {str(cand.dtype).replace('torch.', '')}, "
                            f"expected {str(native.dtype).replace('torch.', '')}")
    stats["passed"] = close
    return stats
