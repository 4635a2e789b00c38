import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tril_kernel(
    x_ptr, out_ptr, M, N,
    stride_xb, stride_xm, stride_xn,
    stride_ob, stride_om, stride_on,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    pid_b = tl.program_id(0)
    pid_m = tl.program_id(1)
    pid_n = tl.program_id(2)
    row_start = pid_m * BLOCK_M
    col_start = pid_n * BLOCK_N
    # tiles entirely above the diagonal contain nothing to keep
    if col_start > row_start + BLOCK_M - 1:
        return

    offs_m = row_start + tl.arange(0, BLOCK_M)
    offs_n = col_start + tl.arange(0, BLOCK_N)
    in_bounds = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    keep = offs_n[None, :] <= offs_m[:, None]

    x = tl.load(
        x_ptr + pid_b * stride_xb + offs_m[:, None] * stride_xm + offs_n[None, :] * stride_xn,
        mask=in_bounds & keep, other=0.0,
    )
    tl.store(
        out_ptr + pid_b * stride_ob + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on,
        x, mask=in_bounds,
    )


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, M, N = x.shape
        out = torch.empty(B, M, N, device=x.device, dtype=x.dtype)
        BLOCK_M, BLOCK_N = 64, 64
        grid = (B, triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
        tril_kernel[grid](
            x, out, M, N,
            x.stride(0), x.stride(1), x.stride(2),
            out.stride(0), out.stride(1), out.stride(2),
            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
        )
        return out
