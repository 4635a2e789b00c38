import torch
import torch.nn as nn


class Model(nn.Module):
    """Batched matrix-vector product: y[b] = A[b] @ x[b]."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.bmm(A, x.unsqueeze(2)).squeeze(2)


batch_size = 6
M = 70
K = 200


def get_inputs():
    A = torch.randn(batch_size, M, K)
    x = torch.randn(batch_size, K)
    return [A, x]


def get_init_inputs():
    return []
