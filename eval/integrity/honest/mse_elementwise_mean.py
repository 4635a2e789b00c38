import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def squared_diff_kernel(p_ptr, t_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    diff = tl.load(p_ptr + offsets, mask=mask) - tl.load(t_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, diff * diff, mask=mask)


def squared_diff(predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    predictions = predictions.contiguous()
    targets = targets.contiguous()
    out = torch.empty_like(predictions)
    n_elements = out.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    squared_diff_kernel[grid](predictions, targets, out, n_elements, BLOCK_SIZE=1024)
    return out


class ModelNew(nn.Module):
    """Squared differences in Triton; the final mean of the kernel's results in PyTorch."""

    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        sq = squared_diff(predictions, targets)
        return torch.mean(sq)
