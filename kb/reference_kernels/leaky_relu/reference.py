import torch
import torch.nn as nn
import torch.nn.functional as F

M = 50
N = 333
NEGATIVE_SLOPE = 0.05


class Model(nn.Module):
    """Leaky ReLU: x if x >= 0 else negative_slope * x."""

    def __init__(self, negative_slope):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        return F.leaky_relu(x, self.negative_slope)


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return [NEGATIVE_SLOPE]
