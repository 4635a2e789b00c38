import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_bias_kernel(x_ptr, wt_ptr, b_ptr, out_ptr, M, N, K_PADDED,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K_PADDED, BLOCK_K):
        x = tl.load(x_ptr + rm[:, None] * K_PADDED + (k + rk)[None, :], mask=rm[:, None] < M, other=0.0)
        w = tl.load(wt_ptr + (k + rk)[:, None] * N + rn[None, :], mask=rn[None, :] < N, other=0.0)
        acc += tl.dot(x, w)
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def relu_kernel(ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(ptr + offs, tl.maximum(tl.load(ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    """Linear + ReLU as two kernels; K is zero-padded to the block size by a copy."""

    BLOCK_K = 32

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        M, K = x.shape
        N = self.linear.out_features
        k_padded = triton.cdiv(K, self.BLOCK_K) * self.BLOCK_K
        x_pad = torch.zeros((M, k_padded), device=x.device, dtype=x.dtype)
        x_pad[:, :K] = x
        w_t = torch.zeros((k_padded, N), device=x.device, dtype=x.dtype)
        w_t[:K, :] = self.linear.weight.t()
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        matmul_bias_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](
            x_pad, w_t, self.linear.bias, out, M, N, k_padded, BLOCK_M=32, BLOCK_N=32, BLOCK_K=self.BLOCK_K)
        relu_kernel[(triton.cdiv(M * N, 1024),)](out, M * N, BLOCK=1024)
        return out
