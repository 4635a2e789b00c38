import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    """Row softmax; launch configurations are cached per input shape."""

    def __init__(self):
        super().__init__()
        self._configs = {}

    def _config(self, shape):
        if shape not in self._configs:
            block = triton.next_power_of_2(shape[1])
            num_warps = 8 if block >= 2048 else 4
            self._configs[shape] = (block, num_warps)
        return self._configs[shape]

    def forward(self, x):
        x = x.contiguous()
        block, num_warps = self._config(tuple(x.shape))
        out = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](out, x, x.stride(0), x.shape[1], BLOCK_SIZE=block, num_warps=num_warps)
        return out
