import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def histogram_kernel(values_ptr, counts_ptr, n_values, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_values
    bins = tl.load(values_ptr + offsets, mask=mask, other=0)
    ones = tl.full((BLOCK_SIZE,), 1, dtype=tl.int64)
    # many lanes (and programs) hit the same bin: only an atomic add counts every one;
    # the mask keeps padding lanes from counting into bin 0
    tl.atomic_add(counts_ptr + bins, ones, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_bins):
        super().__init__()
        self.num_bins = num_bins

    def forward(self, values):
        values = values.contiguous()
        n_values = values.numel()
        counts = torch.zeros(self.num_bins, device=values.device, dtype=torch.int64)
        BLOCK_SIZE = 1024
        grid = (triton.cdiv(n_values, BLOCK_SIZE),)
        histogram_kernel[grid](values, counts, n_values, BLOCK_SIZE=BLOCK_SIZE)
        return counts
