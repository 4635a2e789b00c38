import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def l1_sum_kernel(a_ptr, b_ptr, out_ptr, n, n_blocks, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    partial = tl.zeros([BLOCK], dtype=tl.float32)
    for blk in range(pid, n_blocks):
        offs = blk * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        a = tl.load(a_ptr + offs, mask=mask, other=0.0)
        b = tl.load(b_ptr + offs, mask=mask, other=0.0)
        partial += tl.abs(a - b)
    tl.atomic_add(out_ptr, tl.sum(partial, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        a = a.contiguous().view(-1)
        b = b.contiguous().view(-1)
        n = a.numel()
        out = torch.zeros((), device=a.device, dtype=torch.float32)
        n_blocks = triton.cdiv(n, 256)
        l1_sum_kernel[(min(n_blocks, 4),)](a, b, out, n, n_blocks, BLOCK=256)
        return out
