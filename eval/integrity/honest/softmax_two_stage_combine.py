import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def block_stats_kernel(x_ptr, max_ptr, sum_ptr, n_cols, n_blocks, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    block = tl.program_id(1)
    cols = block * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    block_max = tl.max(x, axis=0)
    tl.store(max_ptr + row * n_blocks + block, block_max)
    tl.store(sum_ptr + row * n_blocks + block, tl.sum(tl.exp(x - block_max), axis=0))


@triton.jit
def normalize_kernel(x_ptr, row_max_ptr, row_sum_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    y = tl.exp(x - tl.load(row_max_ptr + row)) / tl.load(row_sum_ptr + row)
    tl.store(out_ptr + row * stride + cols, y, mask=mask)


class ModelNew(nn.Module):
    """Softmax over column blocks: per-block statistics in Triton, a tiny combine of the
    (rows x blocks) statistics in PyTorch, the normalisation in Triton."""

    BLOCK = 256

    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        n_blocks = triton.cdiv(cols, self.BLOCK)
        block_max = torch.empty((rows, n_blocks), device=x.device, dtype=torch.float32)
        block_sum = torch.empty((rows, n_blocks), device=x.device, dtype=torch.float32)
        block_stats_kernel[(rows, n_blocks)](x, block_max, block_sum, cols, n_blocks, x.stride(0), BLOCK=self.BLOCK)
        row_max = block_max.max(dim=1).values
        row_sum = (block_sum * torch.exp(block_max - row_max[:, None])).sum(dim=1)
        out = torch.empty_like(x)
        normalize_kernel[(rows, n_blocks)](x, row_max.contiguous(), row_sum.contiguous(), out, cols, x.stride(0),
                                           BLOCK=self.BLOCK)
        return out
