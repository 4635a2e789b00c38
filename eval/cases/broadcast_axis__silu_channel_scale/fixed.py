import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def silu_scale_kernel(x_ptr, s_ptr, y_ptr, n_rows, C, L, BLOCK_R: tl.constexpr, BLOCK_L: tl.constexpr):
    pid_r = tl.program_id(0)
    pid_l = tl.program_id(1)
    rows = pid_r * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = pid_l * BLOCK_L + tl.arange(0, BLOCK_L)
    row_mask = rows < n_rows
    mask = row_mask[:, None] & (cols[None, :] < L)
    offs = rows[:, None] * L + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    s = tl.load(s_ptr + rows % C, mask=row_mask, other=0.0)
    y = x * tl.sigmoid(x) * s[:, None]
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(channels))

    def forward(self, x):
        x = x.contiguous()
        N, C, L = x.shape
        y = torch.empty_like(x)
        n_rows = N * C
        BLOCK_R, BLOCK_L = 16, 128
        grid = (triton.cdiv(n_rows, BLOCK_R), triton.cdiv(L, BLOCK_L))
        silu_scale_kernel[grid](x, self.scale, y, n_rows, C, L, BLOCK_R=BLOCK_R, BLOCK_L=BLOCK_L)
        return y
