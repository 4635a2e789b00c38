import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def affine2d_kernel(x_ptr, y_ptr, M, N, stride_xm, stride_xn, stride_ym, stride_yn,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn, mask=mask, other=0.0)
    tl.store(y_ptr + rows[:, None] * stride_ym + cols[None, :] * stride_yn, x * 3.0 - 1.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        M, N = x.shape
        y = torch.empty((M, N), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(M, 8), triton.cdiv(N, 16))
        affine2d_kernel[grid](x, y, M, N, x.stride(1), x.stride(0), y.stride(0), y.stride(1),
                              BLOCK_M=8, BLOCK_N=16)
        return y
