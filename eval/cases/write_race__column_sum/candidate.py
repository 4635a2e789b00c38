import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def column_sum_kernel(x_ptr, out_ptr, n_rows, n_cols, stride_r, stride_c,
                      BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    pid_c = tl.program_id(0)
    pid_r = tl.program_id(1)
    rows = pid_r * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * stride_r + cols[None, :] * stride_c, mask=mask, other=0.0)
    partial = tl.sum(x.to(tl.float32), axis=0)
    tl.store(out_ptr + cols, partial, mask=cols < n_cols)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        assert x.dim() == 2 and self.dim == 0
        n_rows, n_cols = x.shape
        out = torch.empty(n_cols, device=x.device, dtype=torch.float32)
        BLOCK_R, BLOCK_C = 128, 32
        # split the rows over several programs so tall matrices still fill the GPU
        grid = (triton.cdiv(n_cols, BLOCK_C), triton.cdiv(n_rows, BLOCK_R))
        column_sum_kernel[grid](x, out, n_rows, n_cols, x.stride(0), x.stride(1),
                                BLOCK_R=BLOCK_R, BLOCK_C=BLOCK_C)
        return out
