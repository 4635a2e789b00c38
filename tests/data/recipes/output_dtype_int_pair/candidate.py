import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def midpoint_kernel(a_ptr, b_ptr, out_ptr, numel, BLOCK_SIZE: tl.constexpr):
    idx = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    m = idx < numel
    a = tl.load(a_ptr + idx, mask=m)
    b = tl.load(b_ptr + idx, mask=m)
    tl.store(out_ptr + idx, (a + b) / 2, mask=m)


def midpoint(a, b):
    a = a.contiguous()
    b = b.contiguous()
    out = torch.empty(a.shape, device=a.device, dtype=a.dtype)
    numel = a.numel()
    midpoint_kernel[(triton.cdiv(numel, 256),)](a, b, out, numel, BLOCK_SIZE=256)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return midpoint(a, b)
