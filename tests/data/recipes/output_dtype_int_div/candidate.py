import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def quarter_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x / 4, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, counts):
        counts = counts.contiguous()
        out = torch.empty_like(counts)
        n = counts.numel()
        quarter_kernel[(triton.cdiv(n, 512),)](counts, out, n, BLOCK=512)
        return out
