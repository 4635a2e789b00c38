import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cross_entropy_row_kernel(logits_ptr, targets_ptr, loss_ptr, n_classes, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_classes
    logits = tl.load(logits_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    m = tl.max(logits, axis=0)
    lse = m + tl.log(tl.sum(tl.exp(logits - m), axis=0))
    target = tl.load(targets_ptr + row)
    picked = tl.sum(tl.where(cols == target, logits, 0.0), axis=0)
    tl.store(loss_ptr + row, lse - picked)


class ModelNew(nn.Module):
    """Per-row losses in Triton; the batch mean of those few values is taken in PyTorch."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        predictions = predictions.contiguous()
        batch, n_classes = predictions.shape
        losses = torch.empty(batch, device=predictions.device, dtype=torch.float32)
        cross_entropy_row_kernel[(batch,)](predictions, targets, losses, n_classes, predictions.stride(0),
                                           BLOCK=triton.next_power_of_2(n_classes))
        return losses.mean()
