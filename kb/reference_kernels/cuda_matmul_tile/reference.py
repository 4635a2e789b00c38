import torch
import torch.nn as nn

M = 129
K = 200
N = 97


class Model(nn.Module):
    """C = A @ B for A [M, K] and B [K, N]."""

    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
