import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rowdot_kernel(x_ptr, y_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float16)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + row * n_cols + start + cols, mask=mask, other=0.0)
        y = tl.load(y_ptr + row * n_cols + start + cols, mask=mask, other=0.0)
        acc += x * y
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        x = x.contiguous()
        y = y.contiguous()
        rows, cols = x.shape
        out = torch.empty(rows, device=x.device, dtype=torch.float32)
        rowdot_kernel[(rows,)](x, y, out, cols, BLOCK=256)
        return out
