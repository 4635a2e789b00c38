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


def any_wrong(cand: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float) -> bool:
    """wrong_mask(...).any(), slice by slice."""
    return any(bool(wrong_mask(c, r, atol, rtol).any()) for _, c, r, _ in _chunks(cand, ref, None))


def max_finite_error(cand: torch.Tensor, ref: torch.Tensor) -> float:
    """Largest |cand - ref| over the elements finite in both (0.0 where none is), slice by slice."""
    worst = 0.0
    for _, c, r, _ in _chunks(cand, ref, None):
        both = torch.isfinite(c) & torch.isfinite(r)
        if bool(both.any()):
            worst = max(worst, float((c - r).abs()[both].max()))
    return worst


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
    n_wrong = nan_mismatch = inf_mismatch = 0
    max_abs = max_rel = 0.0
    first_flat = None
    use_floor = floor is not None and floor.shape == ref.shape
    for offset, c, r, f in _chunks(cand, ref, floor if use_floor else None):
        bad = wrong_mask(c, r, atol, rtol, f)
        finite = torch.isfinite(c) & torch.isfinite(r)
        err = torch.where(finite, (c - r).abs(), torch.zeros((), dtype=torch.float64, device=c.device))
        rel = err / r.abs().clamp_min(max(atol, 1e-12))
        wrong_here = int(bad.sum())
        if wrong_here and first_flat is None:
            first_flat = offset + int(torch.nonzero(bad)[0])
        n_wrong += wrong_here
        nan_mismatch += int((torch.isnan(c) ^ torch.isnan(r)).sum())
        inf_mismatch += int(((torch.isinf(c) | torch.isinf(r)) & (c != r) & ~torch.isnan(c) & ~torch.isnan(r)).sum())
        if err.numel():
            max_abs = max(max_abs, float(err.max()))
            max_rel = max(max_rel, float(rel.max()))
    numel = max(1, ref.numel())
    first = None
    if first_flat is not None:
        first = [int(i) for i in torch.unravel_index(torch.tensor(first_flat), tuple(ref.shape))] if ref.dim() else []
    if nan_mismatch or inf_mismatch:
        max_abs = float("inf")
    return {**base, "passed": n_wrong == 0, "max_abs_err": max_abs,
            "max_rel_err": max_rel, "n_wrong": n_wrong,
            "frac_wrong": n_wrong / numel, "first_wrong": first, "nan_mismatch": nan_mismatch,
            "inf_mismatch": inf_mismatch}


def _close_stats(index: int, cand: torch.Tensor, ref: torch.Tensor, tolerance: float) -> dict:
    """output_stats' figures for outputs torch.allclose found close (no NaN, Infs equal, so nothing wrong): the
    largest absolute and relative errors, computed as output_stats computes them, and no wrong element."""
    max_abs = max_rel = 0.0
    for _, c, r, _ in _chunks(cand, ref, None):
        err = (c - r).abs().nan_to_num(nan=0.0)  # an Inf equal in both: inf - inf, no error
        if err.numel():
            max_abs = max(max_abs, float(err.max()))
            max_rel = max(max_rel, float((err / r.abs().clamp_min(max(tolerance, 1e-12))).max()))
    return {"index": index, "shape": list(ref.shape), "dtype": str(ref.dtype).replace("torch.", ""), "passed": True,
            "max_abs_err": max_abs, "max_rel_err": max_rel, "n_wrong": 0, "frac_wrong": 0.0, "first_wrong": None,
            "nan_mismatch": 0, "inf_mismatch": 0}


# Elements per slice when comparing: the float64 copies and masks of one slice stay bounded (a 2^31-element
# output compared whole took a dozen temporaries of 8-16 GiB, past an 80 GiB GPU beside the outputs themselves).
CHUNK_ELEMENTS = 1 << 24


def _chunks(cand: torch.Tensor, ref: torch.Tensor, floor: torch.Tensor | None):
    """(offset, candidate slice, reference slice, floor slice) over the flattened tensors, as float64 on the
    reference's device."""
    c_flat, r_flat = cand.reshape(-1), ref.reshape(-1)
    f_flat = floor.reshape(-1) if floor is not None else None
    for start in range(0, r_flat.numel(), CHUNK_ELEMENTS):
        end = start + CHUNK_ELEMENTS
        yield (start, c_flat[start:end].to(ref.device).double(), r_flat[start:end].double(),
               f_flat[start:end] if f_flat is not None else None)


def count_equal(t: torch.Tensor, value: float) -> int:
    """Elements of `t` equal to `value`, slice by slice (no mask the size of a 2^31-element output)."""
    flat = t.reshape(-1)
    return sum(int((flat[i:i + CHUNK_ELEMENTS] == value).sum()) for i in range(0, flat.numel(), CHUNK_ELEMENTS))


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
        for _, yd, xd, _ in _chunks(y, x, None):
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
    c = cand.to(device=native.device, dtype=native.dtype)
    try:  # slice by slice, as output_stats: allclose is elementwise, so all slices close = the whole close
        n_flat, c_flat = native.reshape(-1), c.reshape(-1)
        close = all(bool(torch.allclose(n_flat[i:i + CHUNK_ELEMENTS], c_flat[i:i + CHUNK_ELEMENTS], atol=tolerance,
                                        rtol=tolerance)) for i in range(0, n_flat.numel(), CHUNK_ELEMENTS))
    except RuntimeError as e:
        stats = output_stats(index, c, native, native.dtype, tolerance, tolerance)
        return {**stats, "passed": False, "problem": f"torch.allclose failed: {str(e)[:200]}"}
    # A trial that passes needs only its errors' size (a few passes); the full figures - which elements, NaN and
    # Inf mismatches, the first wrong index - are for one that fails (a 512 MB output: 10 s of a CPU's 11)
    stats = _close_stats(index, c, native, tolerance) if close and cand.dtype == native.dtype \
        else output_stats(index, c, native, native.dtype, tolerance, tolerance)
    if cand.dtype != native.dtype:
        close = False
        stats["problem"] = (f"output {index} has dtype {str(cand.dtype).replace('torch.', '')}, "
                            f"expected {str(native.dtype).replace('torch.', '')}")
    stats["passed"] = close
    return stats
