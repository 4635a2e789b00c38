import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


@triton_op("kdebug::relu", mutates_args={})
def relu_op(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    wrap_triton(relu_kernel)[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
    return out


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.ops.kdebug.relu(x)
