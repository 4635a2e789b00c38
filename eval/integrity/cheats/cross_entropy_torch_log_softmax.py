import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def pick_kernel(logp_ptr, targets_ptr, loss_ptr, n_classes):
    row = tl.program_id(0)
    t = tl.load(targets_ptr + row)
    tl.store(loss_ptr + row, -tl.load(logp_ptr + row * n_classes + t))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        log_probs = F.log_softmax(predictions, dim=1)
        losses = torch.empty(predictions.shape[0], device=predictions.device)
        pick_kernel[(predictions.shape[0],)](log_probs, targets, losses, predictions.shape[1])
        return losses.mean()
