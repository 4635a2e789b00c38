import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def col_scale_kernel(x_ptr, s_ptr, y_ptr, M, N, stride_m, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    x = tl.load(x_ptr + offs_m[:, None] * stride_m + offs_n[None, :], mask=mask, other=0.0)
    s = tl.load(s_ptr + offs_n, mask=offs_n < N, other=0.0)
    tl.store(y_ptr + offs_m[:, None] * stride_m + offs_n[None, :], x * s[:, None], mask=mask)


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.scale = nn.Parameter(torch.rand(n) + 0.5)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        M, N = x.shape
        grid = (triton.cdiv(M, 16), triton.cdiv(N, 16))
        col_scale_kernel[grid](x, self.scale, y, M, N, x.stride(0), BLOCK_M=16, BLOCK_N=16)
        return y
