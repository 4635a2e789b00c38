import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def outer_kernel(
    a_ptr, b_ptr, out_ptr,
    M, N, stride_a, stride_b, stride_om, stride_on,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_m = offs_m < M
    mask_n = offs_n < N

    a = tl.load(a_ptr + offs_m * stride_a, mask=mask_m, other=0.0)
    b = tl.load(b_ptr + offs_n * stride_b, mask=mask_n, other=0.0)
    out = a[:, None] * b[None, :]

    out_ptrs = out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on
    tl.store(out_ptrs, out, mask=mask_m[:, None] & mask_n[None, :])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        M, N = a.shape[0], b.shape[0]
        out = torch.empty(M, N, device=a.device, dtype=a.dtype)
        BLOCK_M, BLOCK_N = 64, 64
        grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
        outer_kernel[grid](
            a, b, out,
            M, N, a.stride(0), b.stride(0), out.stride(0), out.stride(1),
            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
        )
        return out
