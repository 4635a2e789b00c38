import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def block_scan_kernel(x_ptr, out_ptr, sums_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    local = tl.cumsum(x, axis=0)
    tl.store(sums_ptr + pid, tl.sum(x, axis=0))
    # the carry: the totals of the blocks before this one, which their programs have stored
    carry = tl.zeros([1], dtype=tl.float32)
    for j in range(0, pid):
        carry += tl.load(sums_ptr + j + tl.arange(0, 1))
    tl.store(out_ptr + offs, local + tl.sum(carry, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        assert x.dim() == 1 and self.dim == 0
        x = x.contiguous()
        n = x.numel()
        BLOCK = 1024
        n_blocks = triton.cdiv(n, BLOCK)
        out = torch.empty_like(x)
        sums = torch.empty(n_blocks, device=x.device, dtype=torch.float32)
        block_scan_kernel[(n_blocks,)](x, out, sums, n, BLOCK=BLOCK)
        block_scan_kernel[(n_blocks,)](x, out, sums, n, BLOCK=BLOCK)
        return out
