import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cross_entropy_kernel(logits_ptr, targets_ptr, loss_ptr, n_rows, n_classes, stride_row,
                         BLOCK_C: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_C)
    mask = offs < n_classes
    logits = tl.load(logits_ptr + row * stride_row + offs, mask=mask, other=float("-inf")).to(tl.float32)
    m = tl.max(logits, axis=0)
    lse = m + tl.log(tl.sum(tl.exp(logits - m), axis=0))
    target = tl.load(targets_ptr + row)
    target_logit = tl.load(logits_ptr + row * stride_row + target).to(tl.float32)
    tl.atomic_add(loss_ptr, (lse - target_logit) / n_rows)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        logits = predictions.contiguous()
        targets = targets.contiguous()
        n_rows, n_classes = logits.shape
        loss = torch.zeros((), device=logits.device, dtype=torch.float32)
        BLOCK_C = triton.next_power_of_2(n_classes)
        cross_entropy_kernel[(n_rows,)](logits, targets, loss, n_rows, n_classes, logits.stride(0),
                                        BLOCK_C=BLOCK_C)
        return loss
