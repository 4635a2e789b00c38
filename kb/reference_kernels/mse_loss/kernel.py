import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def squared_error_partials_kernel(pred_ptr, target_ptr, partials_ptr, n_elements,
                                  BLOCK_SIZE: tl.constexpr):
    # pass 1: each program reduces its block to one float32 partial sum
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    p = tl.load(pred_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    t = tl.load(target_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    diff = p - t  # masked lanes: 0 - 0 = 0, adds nothing
    tl.store(partials_ptr + pid, tl.sum(diff * diff, axis=0))


@triton.jit
def mean_of_partials_kernel(partials_ptr, out_ptr, n_partials, n_elements,
                            BLOCK_SIZE: tl.constexpr):
    # pass 2: a single program adds the partials in a fixed order (deterministic, no atomics)
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_partials, BLOCK_SIZE):
        offsets = start + tl.arange(0, BLOCK_SIZE)
        acc += tl.load(partials_ptr + offsets, mask=offsets < n_partials, other=0.0)
    mean = tl.sum(acc, axis=0) / n_elements  # divide by the element count, not the block count
    tl.store(out_ptr, mean.to(out_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        predictions = predictions.contiguous()
        targets = targets.contiguous()
        n_elements = predictions.numel()
        BLOCK_SIZE = 1024
        n_partials = triton.cdiv(n_elements, BLOCK_SIZE)
        partials = torch.empty(n_partials, device=predictions.device, dtype=torch.float32)
        out = torch.empty((), device=predictions.device, dtype=predictions.dtype)
        squared_error_partials_kernel[(n_partials,)](predictions, targets, partials, n_elements,
                                                     BLOCK_SIZE=BLOCK_SIZE)
        mean_of_partials_kernel[(1,)](partials, out, n_partials, n_elements, BLOCK_SIZE=256)
        return out
