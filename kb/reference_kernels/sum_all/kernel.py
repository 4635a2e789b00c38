import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_all_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    partial = tl.sum(x, axis=0)
    # every program adds into the same scalar: a plain store would keep only the last one
    tl.atomic_add(out_ptr, partial)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_elements = x.numel()
        # atomics accumulate into the output, so it must start at zero (never torch.empty)
        out = torch.zeros((), device=x.device, dtype=torch.float32)
        BLOCK_SIZE = 1024
        grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
        sum_all_kernel[grid](x, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)
        return out.to(x.dtype)
