import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, stride_r, stride_c, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.int64)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_r + cols * stride_c, mask=cols < n_cols, other=0)
        acc += x.to(tl.int64)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n_rows, n_cols = x.shape
        out = torch.empty(n_rows, device=x.device, dtype=torch.int64)
        row_sum_kernel[(n_rows,)](x, out, n_cols, x.stride(0), x.stride(1), BLOCK=1024)
        return out
