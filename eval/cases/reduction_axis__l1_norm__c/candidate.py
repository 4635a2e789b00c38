import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def l1_normalize_kernel(
    x_ptr, out_ptr, n_rows, n_cols, stride_x, stride_out,
    BLOCK_ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    cols = tl.arange(0, BLOCK_COLS)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)

    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0)
    x = x.to(tl.float32)
    l1 = tl.sum(tl.abs(x), axis=0)
    y = x / l1[None, :]
    tl.store(out_ptr + rows[:, None] * stride_out + cols[None, :], y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty_like(x)
        BLOCK_ROWS = 8
        BLOCK_COLS = triton.next_power_of_2(n_cols)
        grid = (triton.cdiv(n_rows, BLOCK_ROWS),)
        l1_normalize_kernel[grid](
            x, out, n_rows, n_cols, x.stride(0), out.stride(0),
            BLOCK_ROWS=BLOCK_ROWS, BLOCK_COLS=BLOCK_COLS,
        )
        return out
