import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gate_kernel(gate_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(gate_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.sigmoid(g) * y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        gate = x.contiguous().sigmoid()
        y = y.contiguous()
        out = torch.empty_like(y)
        n = y.numel()
        gate_kernel[(triton.cdiv(n, 256),)](gate, y, out, n, BLOCK=256)
        return out
