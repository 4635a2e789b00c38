import torch
import torch.nn as nn


class Model(nn.Module):
    """Matrix multiplication with a transposed second operand: C = A @ B.T."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B.T)


M = 97
K = 120
N = 83


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(N, K)
    return [A, B]


def get_init_inputs():
    return []
