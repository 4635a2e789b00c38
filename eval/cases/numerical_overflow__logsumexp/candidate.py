import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def logsumexp_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    x_row = x_ptr + row * stride_row
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + offs
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        acc += tl.exp(x)
    total = tl.sum(acc, axis=0)
    tl.store(out_ptr + row, tl.log(total))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.contiguous().view(-1, x.shape[-1])
        n_rows, n_cols = x2.shape
        out = torch.empty(n_rows, device=x.device, dtype=torch.float32)
        BLOCK_SIZE = 512
        logsumexp_kernel[(n_rows,)](x2, out, n_cols, x2.stride(0), BLOCK_SIZE=BLOCK_SIZE)
        return out.view(*x.shape[:-1], 1).to(x.dtype)
