import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def clamp2_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    pid_c = tl.program_id(1)
    offs = tl.arange(0, BLOCK)
    cols = pid_c * BLOCK + offs
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0)
    y = tl.minimum(tl.maximum(x, -0.5), 0.5) * 2.0
    tl.store(y_ptr + row * stride_y + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, cols = x.shape
        clamp2_kernel[(rows, triton.cdiv(cols, 128))](x, y, cols, x.stride(0), y.stride(0), BLOCK=128)
        return y
