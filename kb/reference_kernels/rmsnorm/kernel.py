import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, weight_ptr, out_ptr, n_cols, stride_x_row, stride_x_col, stride_out_row,
                   eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)  # one program per row; BLOCK_SIZE >= n_cols
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x_row + cols * stride_x_col, mask=mask, other=0.0)
    x = x.to(tl.float32)
    mean_square = tl.sum(x * x, axis=0) / n_cols  # padding lanes are 0 and add nothing
    inv_rms = tl.rsqrt(mean_square + eps)
    w = tl.load(weight_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = x * inv_rms * w
    tl.store(out_ptr + row * stride_out_row + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(hidden))

    def forward(self, x):
        n_cols = x.shape[-1]
        x2d = x.reshape(-1, n_cols)
        n_rows = x2d.shape[0]
        out = torch.empty((n_rows, n_cols), device=x.device, dtype=x.dtype)
        BLOCK_SIZE = triton.next_power_of_2(n_cols)
        rmsnorm_kernel[(n_rows,)](x2d, self.weight, out, n_cols, x2d.stride(0), x2d.stride(1),
                                  out.stride(0), self.eps, BLOCK_SIZE=BLOCK_SIZE)
        return out.view(x.shape)
