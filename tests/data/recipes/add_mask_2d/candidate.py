import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def abs2d_kernel(x_ptr, y_ptr, n_rows, n_cols, stride_r, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    ptrs = rows[:, None] * stride_r + cols[None, :]
    x = tl.load(x_ptr + ptrs)
    tl.store(y_ptr + ptrs, tl.abs(x))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        R, C = x.shape
        abs2d_kernel[(triton.cdiv(R, 8), triton.cdiv(C, 16))](x, y, R, C, x.stride(0), BLOCK_R=8, BLOCK_C=16)
        return y
