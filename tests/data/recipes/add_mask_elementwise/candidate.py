import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def axpy_kernel(a_ptr, b_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    a = tl.load(a_ptr + offsets)
    b = tl.load(b_ptr + offsets)
    tl.store(out_ptr + offsets, a * 2.0 + b)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        a = a.contiguous()
        b = b.contiguous()
        out = torch.empty_like(a)
        n = a.numel()
        grid = (triton.cdiv(n, 256),)
        axpy_kernel[grid](a, b, out, n, BLOCK_SIZE=256)
        return out
