import torch
import torch.nn as nn


class Model(nn.Module):
    """Outer product of two vectors: out[i, j] = a[i] * b[j]."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.outer(a, b)


M = 150
N = 230


def get_inputs():
    a = torch.randn(M)
    b = torch.randn(N)
    return [a, b]


def get_init_inputs():
    return []
