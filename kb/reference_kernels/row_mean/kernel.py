import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_mean_kernel(x_ptr, out_ptr, n_cols, stride_row, stride_col, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)  # one program per row
    row_ptr = x_ptr + row * stride_row
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(row_ptr + cols * stride_col, mask=mask, other=0.0)
        acc += x.to(tl.float32)
    # divide by the true row length, not by BLOCK_SIZE or the number of chunks
    mean = tl.sum(acc, axis=0) / n_cols
    tl.store(out_ptr + row, mean.to(out_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        n_rows, n_cols = x.shape
        out = torch.empty(n_rows, device=x.device, dtype=x.dtype)
        BLOCK_SIZE = 256
        row_mean_kernel[(n_rows,)](x, out, n_cols, x.stride(0), x.stride(1), BLOCK_SIZE=BLOCK_SIZE)
        return out
