import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def half_max_kernel(x_ptr, y_ptr, out_ptr, x_stride, y_stride, out_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < out_stride  # flat view
    a = tl.load(x_ptr + offs * x_stride, mask=valid)
    b = tl.load(y_ptr + offs * y_stride, mask=valid)
    tl.store(out_ptr + offs * out_stride, tl.maximum(a, b) * 0.5, mask=valid)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        xf = x.contiguous().view(-1)
        yf = y.contiguous().view(-1)
        out = torch.empty_like(xf)
        grid = (triton.cdiv(xf.numel(), 256),)
        half_max_kernel[grid](xf, yf, out, xf.stride(0), yf.stride(0), out.stride(0), BLOCK=256)
        return out.view_as(x)
