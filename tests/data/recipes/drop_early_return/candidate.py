import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def residual_scale_kernel(x_ptr, r_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK_SIZE + BLOCK_SIZE > n:
        return
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offs)
    r = tl.load(r_ptr + offs)
    tl.store(out_ptr + offs, (x + r) * 0.5)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, r):
        x = x.contiguous()
        r = r.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        residual_scale_kernel[(triton.cdiv(n, 256),)](x, r, out, n, BLOCK_SIZE=256)
        return out
