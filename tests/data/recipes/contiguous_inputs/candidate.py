import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def halfmax_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    a = tl.load(x_ptr + offs, mask=mask, other=0.0)
    b = tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(a, b) * 0.5, mask=mask)


def halfmax(x, y):
    out = torch.empty(x.shape, device=x.device, dtype=x.dtype)
    n = x.numel()
    halfmax_kernel[(triton.cdiv(n, 128),)](x, y, out, n, BLOCK=128)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return halfmax(x, y)
