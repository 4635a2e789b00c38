import torch
import torch.nn as nn

BATCH = 3
SEQ = 5
HIDDEN = 300
EPS = 1e-6


class Model(nn.Module):
    """RMS normalisation over the last dimension: x / sqrt(mean(x^2) + eps) * weight."""

    def __init__(self, hidden, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(hidden))

    def forward(self, x):
        rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * rms * self.weight


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN)]


def get_init_inputs():
    return [HIDDEN, EPS]
