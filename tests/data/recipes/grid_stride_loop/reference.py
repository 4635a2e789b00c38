import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum of absolute differences (L1 loss with reduction='sum')."""

    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.abs(a - b).sum()


def get_inputs():
    return [torch.randn(3000), torch.randn(3000)]


def get_init_inputs():
    return []
