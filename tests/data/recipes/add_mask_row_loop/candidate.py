import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def l2norm_kernel(x_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK):
        x = tl.load(x_ptr + row * n_cols + off + cols)
        acc += x * x
    inv = 1.0 / tl.sqrt(tl.sum(acc, axis=0) + eps)
    for off in range(0, n_cols, BLOCK):
        mask = off + cols < n_cols
        x = tl.load(x_ptr + row * n_cols + off + cols, mask=mask, other=0.0)
        tl.store(out_ptr + row * n_cols + off + cols, x * inv, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        l2norm_kernel[(n_rows,)](x, out, n_cols, 1e-6, BLOCK=128)
        return out
