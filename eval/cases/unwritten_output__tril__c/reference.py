import torch
import torch.nn as nn


class Model(nn.Module):
    """Lower-triangular masking of a batch of matrices (torch.tril)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tril(x)


batch_size = 2
M = 150
N = 170


def get_inputs():
    x = torch.randn(batch_size, M, N)
    return [x]


def get_init_inputs():
    return []
