import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fma2d_kernel(x_ptr, y_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(1)
    pid_n = tl.program_id(0)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    idx = offs_m[:, None] * N + offs_n[None, :]
    x = tl.load(x_ptr + idx, mask=mask, other=0.0)
    y = tl.load(y_ptr + idx, mask=mask, other=0.0)
    tl.store(out_ptr + idx, x * y + x, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        x = x.contiguous()
        y = y.contiguous()
        M, N = x.shape
        out = torch.empty_like(x)
        grid = (triton.cdiv(M, 8), triton.cdiv(N, 8))
        fma2d_kernel[grid](x, y, out, M, N, BLOCK_M=8, BLOCK_N=8)
        return out
