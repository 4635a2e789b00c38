import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cross_entropy_row_kernel(logits_ptr, targets_ptr, losses_ptr, n_classes, stride_row, stride_col,
                             BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)  # one program per sample; BLOCK_SIZE >= n_classes
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_classes
    row_ptr = logits_ptr + row * stride_row
    x = tl.load(row_ptr + cols * stride_col, mask=mask, other=float("-inf")).to(tl.float32)
    row_max = tl.max(x, axis=0)
    log_sum_exp = row_max + tl.log(tl.sum(tl.exp(x - row_max), axis=0))
    target = tl.load(targets_ptr + row)
    target_logit = tl.load(row_ptr + target * stride_col).to(tl.float32)
    tl.store(losses_ptr + row, log_sum_exp - target_logit)


@triton.jit
def mean_kernel(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    # second pass: a single program sums the per-row losses (deterministic, no atomics)
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n, BLOCK_SIZE):
        offsets = start + tl.arange(0, BLOCK_SIZE)
        acc += tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    mean = tl.sum(acc, axis=0) / n
    tl.store(out_ptr, mean.to(out_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        n_rows, n_classes = logits.shape
        targets = targets.contiguous()
        losses = torch.empty(n_rows, device=logits.device, dtype=torch.float32)
        out = torch.empty((), device=logits.device, dtype=logits.dtype)  # 0-d, like the reference
        BLOCK_SIZE = triton.next_power_of_2(n_classes)
        cross_entropy_row_kernel[(n_rows,)](logits, targets, losses, n_classes,
                                            logits.stride(0), logits.stride(1),
                                            BLOCK_SIZE=BLOCK_SIZE)
        mean_kernel[(1,)](losses, out, n_rows, BLOCK_SIZE=256)
        return out
