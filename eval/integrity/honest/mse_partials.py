import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def squared_error_partials_kernel(p_ptr, t_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    d = tl.load(p_ptr + offs, mask=mask, other=0.0) - tl.load(t_ptr + offs, mask=mask, other=0.0)
    tl.store(partial_ptr + pid, tl.sum(d * d, axis=0))


class ModelNew(nn.Module):
    """Squared errors summed per block in Triton; the few block sums are added up at the end."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        p = predictions.contiguous().view(-1)
        t = targets.contiguous().view(-1)
        n = p.numel()
        n_blocks = triton.cdiv(n, 1024)
        partials = torch.empty(n_blocks, device=p.device, dtype=torch.float32)
        squared_error_partials_kernel[(n_blocks,)](p, t, partials, n, BLOCK=1024)
        return partials.sum() / n
