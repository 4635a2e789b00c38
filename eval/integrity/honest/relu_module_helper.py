import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class TritonReLU:
    """A callable wrapper holding the launch parameters."""

    def __init__(self, block=512):
        self.block = block

    def __call__(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        if n == 0:
            return out
        _relu_kernel[(triton.cdiv(n, self.block),)](x, out, n, BLOCK=self.block)
        return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = TritonReLU()

    def forward(self, x):
        return self.act(x)
