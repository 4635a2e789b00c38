import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def suffix_sum_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    running = tl.zeros([], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
        y = tl.cumsum(x, axis=0, reverse=True) + running
        tl.store(out_ptr + row * n_cols + cols, y, mask=mask)
        running += tl.sum(x, axis=0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        out = torch.empty(x2.shape, device=x.device, dtype=x.dtype)
        suffix_sum_kernel[(x2.shape[0],)](x2, out, x2.shape[1], x2.stride(0), BLOCK=64)
        return out.reshape(x.shape)
