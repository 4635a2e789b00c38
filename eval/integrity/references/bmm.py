import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Batched matrix multiplication."""

    def __init__(self):
        super().__init__()


    def forward(self, A, B):
        return torch.bmm(A, B)


batch = 4
M = 32
K = 48
N = 40


def get_inputs():
    return [torch.randn(batch, M, K), torch.randn(batch, K, N)]


def get_init_inputs():
    return []
