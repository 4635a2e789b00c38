import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scores_kernel(q_ptr, k_ptr, s_ptr, Lq, Lk, D, scale,
                  BLOCK_Q: tl.constexpr, BLOCK_KV: tl.constexpr, BLOCK_D: tl.constexpr):
    rq = tl.program_id(0) * BLOCK_Q + tl.arange(0, BLOCK_Q)
    rk = tl.program_id(1) * BLOCK_KV + tl.arange(0, BLOCK_KV)
    d = tl.arange(0, BLOCK_D)
    q = tl.load(q_ptr + rq[:, None] * D + d[None, :], mask=(rq[:, None] < Lq) & (d[None, :] < D), other=0.0)
    kt = tl.load(k_ptr + rk[:, None] * D + d[None, :], mask=(rk[:, None] < Lk) & (d[None, :] < D), other=0.0)
    s = tl.dot(q, kt) * scale
    tl.store(s_ptr + rq[:, None] * Lk + rk[None, :], s, mask=(rq[:, None] < Lq) & (rk[None, :] < Lk))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k):
        q = q.contiguous()
        k = k.contiguous()
        Lq, D = q.shape
        Lk = k.shape[0]
        s = torch.empty((Lq, Lk), device=q.device, dtype=q.dtype)
        grid = (triton.cdiv(Lq, 16), triton.cdiv(Lk, 16))
        scores_kernel[grid](q, k, s, Lq, Lk, D, 0.125, BLOCK_Q=16, BLOCK_KV=16, BLOCK_D=16)
        return s
