"""The reference's own per-element rounding error (debugger/sandbox/noise.py): a cancelling output is
not held to atol against a candidate whose fp32 error there is one the reference has itself, and a
real precision loss (fp16 operands) still fails."""
import torch

from debugger import compare
from debugger.case import case_from_sources
from debugger.evaluate import evaluate
from debugger.sandbox.noise import noise_floors

CANCEL_REF = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """y = x @ w.T, where row 0 of w is orthogonal to every row of x: outputs near 0 from large summands."""

    def __init__(self):
        super().__init__()

    def forward(self, x, w):
        return x @ w.t()


def get_inputs():
    x = torch.randn(16, 48)
    w = torch.randn(24, 48)
    q, _ = torch.linalg.qr(x.t().double())           # an orthonormal basis of x's rows
    w0 = w[0].double()
    w[0] = (w0 - q @ (q.t() @ w0)).float() * 1e3    # x @ w[0] = 0 up to rounding, summands ~1e3
    return [x, w]


def get_init_inputs():
    return []
'''

CANDIDATE = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mm_kernel(x_ptr, w_ptr, y_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(w_ptr + rn[None, :] * K + rk[:, None], mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0)
        acc += tl.dot(a.to(DOT_DTYPE), b.to(DOT_DTYPE)).to(tl.float32)
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, w):
        x, w = x.contiguous(), w.contiguous()
        M, K = x.shape
        N = w.shape[0]
        y = torch.empty(M, N, device=x.device, dtype=x.dtype)
        mm_kernel[(triton.cdiv(M, 16), triton.cdiv(N, 16))](x, w, y, M, N, K, BM=16, BN=16, BK=16)
        return y
'''


def _inputs(seed=0):
    ns: dict = {}
    exec(CANCEL_REF, ns)
    torch.manual_seed(seed)
    return ns["Model"](), ns["get_inputs"]()


def test_floor_exceeds_atol_where_the_output_cancels():
    model, xs = _inputs()
    native = [model(*xs)]
    ref64 = [model(*[x.double() for x in xs])]
    floor = noise_floors(model, xs, native, ref64)[0]
    assert floor.shape == native[0].shape
    # column 0 cancels: the reference's own error there is far above atol = 1e-4 ...
    assert float(floor[:, 0].min()) > 1e-4
    # ... and a candidate that far off passes with the floor, not without it
    off = native[0].clone()
    off[:, 0] = (ref64[0][:, 0] + 1.5 * floor[:, 0]).float()
    assert not compare.output_stats(0, off, ref64[0], torch.float32, 1e-4, 1e-4)["passed"]
    assert compare.output_stats(0, off, ref64[0], torch.float32, 1e-4, 1e-4, floor=2 * floor)["passed"]
    # an error past twice the floor is still wrong
    off[:, 0] = (ref64[0][:, 0] + 3 * floor[:, 0] + 1e-3).float()
    assert not compare.output_stats(0, off, ref64[0], torch.float32, 1e-4, 1e-4, floor=2 * floor)["passed"]


def test_no_floor_for_a_reference_that_does_not_repeat_itself():
    class Noisy(torch.nn.Module):
        def forward(self, x):
            return x + torch.rand_like(x)

    x = torch.randn(10)
    m = Noisy()
    out = [m(x)]
    assert noise_floors(m, [x], out, [out[0].double()]) == [None]


def test_fp32_kernel_passes_and_fp16_operands_still_fail_on_the_interpreter():
    """End to end: the floor lets no real precision loss through (fp16 dot operands fail)."""
    honest = CANDIDATE.replace("DOT_DTYPE", "tl.float32")
    report = evaluate(case_from_sources(CANCEL_REF, honest), device="cpu")
    assert report.status == "pass", report.message
    lossy = CANDIDATE.replace("DOT_DTYPE", "tl.float16")
    report = evaluate(case_from_sources(CANCEL_REF, lossy), device="cpu")
    assert report.status == "mismatch"
