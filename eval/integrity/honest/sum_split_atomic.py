import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def split_sum_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    cols = chunk * BLOCK + tl.arange(0, BLOCK)
    vals = tl.load(x_ptr + row * stride_row + cols, mask=cols < n_cols, other=0.0)
    tl.atomic_add(out_ptr + row, tl.sum(vals, axis=0))


class ModelNew(nn.Module):
    """Row sums split over column chunks; chunks meet through atomics in a zeroed output."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.zeros(n_rows, device=x.device, dtype=torch.float32)
        block = 128
        split_sum_kernel[(n_rows, triton.cdiv(n_cols, block))](x, out, n_cols, x.stride(0), BLOCK=block)
        return out.to(x.dtype)
