import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Binary cross entropy with logits, mean over all elements."""

    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.binary_cross_entropy_with_logits(logits, targets)


batch_size = 45
num_classes = 301


def get_inputs():
    logits = torch.randn(batch_size, num_classes) * 2.0
    targets = torch.rand(batch_size, num_classes)
    return [logits, targets]


def get_init_inputs():
    return []
