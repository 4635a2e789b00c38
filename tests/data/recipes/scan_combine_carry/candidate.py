import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _min_fn(a, b):
    return tl.minimum(a, b)


@triton.jit
def running_min_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    best = float("inf")
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        vals = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=float("inf"))
        prefix = tl.associative_scan(vals, 0, _min_fn)
        tl.store(out_ptr + row * n_cols + cols, prefix, mask=mask)
        best = tl.minimum(best, tl.min(prefix, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        out = torch.empty_like(x2)
        running_min_kernel[(x2.shape[0],)](x2, out, x2.shape[1], BLOCK=64)
        return out.reshape(x.shape)
