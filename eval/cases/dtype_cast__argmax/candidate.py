import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def argmax_rows_kernel(x_ptr, out_ptr, n_cols, stride_row, stride_col, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride_row
    best_val = tl.full([BLOCK_SIZE], float("-inf"), dtype=tl.float32)
    best_idx = tl.zeros([BLOCK_SIZE], dtype=tl.int32)
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + tl.arange(0, BLOCK_SIZE)
        mask = offs < n_cols
        x = tl.load(x_row + offs * stride_col, mask=mask, other=float("-inf")).to(tl.float32)
        take = x > best_val
        best_val = tl.where(take, x, best_val)
        best_idx = tl.where(take, offs, best_idx)
    row_max = tl.max(best_val, axis=0)
    idx = tl.min(tl.where(best_val == row_max, best_idx, n_cols), axis=0)
    tl.store(out_ptr + row, idx)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x_t = x.movedim(self.dim, -1)
        out_shape = x_t.shape[:-1]
        x2 = x_t.reshape(-1, x_t.shape[-1])
        n_rows, n_cols = x2.shape
        out = torch.empty(n_rows, device=x.device, dtype=torch.int32)
        argmax_rows_kernel[(n_rows,)](x2, out, n_cols, x2.stride(0), x2.stride(1), BLOCK_SIZE=512)
        return out.view(out_shape)
