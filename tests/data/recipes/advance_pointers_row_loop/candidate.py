import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rowmax_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    best = tl.full([BLOCK], -float("inf"), tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_row + offs, mask=offs < n_cols, other=-float("inf"))
        best = tl.maximum(best, x)
    tl.store(out_ptr + row, tl.max(best, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
        rowmax_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK=64)
        return out
