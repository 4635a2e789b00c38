import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def segment_sum_kernel(val_ptr, ptr_ptr, out_ptr, total, BLOCK: tl.constexpr):
    seg = tl.program_id(0)
    lo = tl.load(ptr_ptr + seg)
    hi = tl.load(ptr_ptr + seg + 1)
    offs = lo + tl.arange(0, BLOCK)
    vals = tl.load(val_ptr + offs, mask=offs < total, other=0.0)
    tl.store(out_ptr + seg, tl.sum(vals, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, values, ptr):
        values = values.contiguous()
        ptr = ptr.contiguous()  # the kernel reads the offsets flat
        n_seg = ptr.numel() - 1
        out = torch.empty(n_seg, device=values.device, dtype=values.dtype)
        segment_sum_kernel[(n_seg,)](values, ptr, out, values.numel(), BLOCK=64)
        return out
