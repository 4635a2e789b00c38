import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_norm_kernel(x_ptr, norm_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
        acc += x * x
    tl.store(norm_ptr + row, tl.sqrt(tl.sum(acc, axis=0)))


@triton.jit
def scale_rows_kernel(x_ptr, norm_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask)
    tl.store(out_ptr + row * stride + cols, x / tl.load(norm_ptr + row), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        norms = torch.empty(rows, device=x.device, dtype=torch.float32)
        out = torch.empty_like(x)
        row_norm_kernel[(rows,)](x, norms, cols, x.stride(0), BLOCK=128)
        scale_rows_kernel[(rows, triton.cdiv(cols, 128))](x, norms, out, cols, x.stride(0), BLOCK=128)
        return out
