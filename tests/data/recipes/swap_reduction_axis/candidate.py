import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def center_rows_kernel(x_ptr, y_ptr, n_rows, n_cols, stride, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_C)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    tl.store(y_ptr + rows[:, None] * stride + cols[None, :], x - mean[None, :], mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        R, C = x.shape
        center_rows_kernel[(triton.cdiv(R, 4),)](x, y, R, C, x.stride(0), BLOCK_R=4,
                                                 BLOCK_C=triton.next_power_of_2(C))
        return y
