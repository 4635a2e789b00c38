import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_rows_kernel(x_ptr, y_ptr, M, N, stride_m, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    ptrs = x_ptr + rows[:, None] * stride_m + cols[None, :]
    x = tl.load(ptrs, mask=mask, other=-float("inf"))
    e = tl.exp(x)
    denom = tl.sum(e, axis=1)
    y = e / denom[:, None]
    tl.store(y_ptr + rows[:, None] * stride_m + cols[None, :], y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        M, N = x.shape
        y = torch.empty_like(x)
        grid = (triton.cdiv(M, 4),)
        softmax_rows_kernel[grid](x, y, M, N, x.stride(0), BLOCK_M=4, BLOCK_N=triton.next_power_of_2(N))
        return y
