import torch
import torch.nn as nn

M = 70
K = 90
N = 50


class Model(nn.Module):
    """Matrix product C = A @ B of A (M, K) and B (K, N)."""

    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
