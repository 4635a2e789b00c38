import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tail_rows_sum_kernel(x_ptr, out_ptr, first_row, n_cols, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    row = first_row + pid
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0)
        acc += x.to(tl.float32)
    tl.store(out_ptr + pid, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        rows, cols = x.shape
        out = torch.empty(2, device=x.device, dtype=torch.float32)
        tail_rows_sum_kernel[(2,)](x, out, rows - 2, cols, BLOCK=4096)
        return out
