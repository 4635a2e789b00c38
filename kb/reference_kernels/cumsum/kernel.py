import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cumsum_kernel(x_ptr, out_ptr, n_cols, stride_x_row, stride_x_col, stride_out_row,
                  BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)  # one program per row, scanning it block by block
    # The scan runs in float64: a running sum's rounding error grows with the row length, and
    # an output near zero that follows large partial sums would keep that error (torch's CPU
    # cumsum also accumulates float32 in double). The result is rounded to float32 once.
    carry = tl.zeros((), dtype=tl.float64)  # sum of every earlier block of this row
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        # other=0.0: padding lanes sit after the valid ones and must not change the block total
        x = tl.load(x_ptr + row * stride_x_row + cols * stride_x_col, mask=mask, other=0.0)
        x = x.to(tl.float64)
        y = tl.cumsum(x, axis=0) + carry
        tl.store(out_ptr + row * stride_out_row + cols, y.to(out_ptr.dtype.element_ty), mask=mask)
        carry += tl.sum(x, axis=0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        n_rows, n_cols = x.shape
        out = torch.empty((n_rows, n_cols), device=x.device, dtype=x.dtype)
        BLOCK_SIZE = 256
        cumsum_kernel[(n_rows,)](x, out, n_cols, x.stride(0), x.stride(1), out.stride(0),
                                 BLOCK_SIZE=BLOCK_SIZE)
        return out
