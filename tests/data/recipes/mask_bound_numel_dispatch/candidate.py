import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def root_kernel(x_ptr, out_ptr, x_stride, BLOCK_SIZE: tl.constexpr):
    i = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    m = i < x_stride
    v = tl.load(x_ptr + i * x_stride, mask=m)
    tl.store(out_ptr + i * x_stride, tl.sqrt(tl.abs(v)) + 1.0, mask=m)


@triton.jit
def root_clamped_kernel(x_ptr, out_ptr, x_stride, BLOCK_SIZE: tl.constexpr):
    i = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    m = i < x_stride
    v = tl.load(x_ptr + i * x_stride, mask=m)
    tl.store(out_ptr + i * x_stride, tl.minimum(tl.sqrt(tl.abs(v)) + 1.0, 2.0), mask=m)


def sqrt_abs_plus_one(x, clamp):
    flat = x.contiguous().view(-1)
    out = torch.empty_like(flat)
    numel = flat.numel()
    kernel = root_clamped_kernel if clamp else root_kernel
    args = (flat, out, flat.stride(0))
    kernel[(triton.cdiv(numel, 512),)](*args, BLOCK_SIZE=512)
    return out.view_as(x)


class ModelNew(nn.Module):
    def __init__(self, clamp=False):
        super().__init__()
        self.clamp = clamp

    def forward(self, x):
        return sqrt_abs_plus_one(x, self.clamp)
