import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rowsum_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    chunk = tl.program_id(1).to(tl.int64)
    cols = chunk * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.atomic_add(out_ptr + row, tl.sum(x, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.zeros(rows, device=x.device, dtype=x.dtype)
        rowsum_kernel[(rows, triton.cdiv(cols, 128))](x, out, cols, BLOCK=128)
        return out
