import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B for a short, wide output and a long reduction dimension."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


M = 45
N = 70
K = 125


def get_inputs():
    return [torch.rand(M, K), torch.rand(K, N)]


def get_init_inputs():
    return []
