import torch
import torch.nn as nn
import torch.nn.functional as F

M = 50
N = 333


class Model(nn.Module):
    """SiLU / swish: x * sigmoid(x)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.silu(x)


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return []
