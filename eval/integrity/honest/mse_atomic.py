import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mse_atomic_kernel(p_ptr, t_ptr, out_ptr, n, inv_n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    d = tl.load(p_ptr + offs, mask=mask, other=0.0) - tl.load(t_ptr + offs, mask=mask, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(d * d, axis=0) * inv_n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        p = predictions.contiguous()
        t = targets.contiguous()
        n = p.numel()
        out = torch.zeros((), device=p.device, dtype=torch.float32)
        mse_atomic_kernel[(triton.cdiv(n, 2048),)](p, t, out, n, 1.0 / n, BLOCK=2048)
        return out
