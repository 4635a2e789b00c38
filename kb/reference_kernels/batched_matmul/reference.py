import torch
import torch.nn as nn

BATCH = 2
M = 40
K = 50
N = 36


class Model(nn.Module):
    """Batched matrix product: (BATCH, M, K) @ (BATCH, K, N) -> (BATCH, M, N)."""

    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.bmm(a, b)


def get_inputs():
    return [torch.randn(BATCH, M, K), torch.randn(BATCH, K, N)]


def get_init_inputs():
    return []
