import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def partial_sum_kernel(x_ptr, partial_ptr, n_cols, n_chunks, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    cols = chunk * BLOCK + tl.arange(0, BLOCK)
    vals = tl.load(x_ptr + row * stride_row + cols, mask=cols < n_cols, other=0.0)
    tl.store(partial_ptr + row * n_chunks + chunk, tl.sum(vals, axis=0))


class ModelNew(nn.Module):
    """Per-chunk partial sums in Triton, then a tiny sum over the chunks and a division."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        block = 256
        n_chunks = triton.cdiv(n_cols, block)
        partials = torch.empty((n_rows, n_chunks), device=x.device, dtype=torch.float32)
        partial_sum_kernel[(n_rows, n_chunks)](x, partials, n_cols, n_chunks, x.stride(0), BLOCK=block)
        return partials.sum(dim=1) / n_cols
