import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """SiLU (swish) followed by a learned per-channel scale, for x of shape (N, C, L)."""

    def __init__(self, channels):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(channels))

    def forward(self, x):
        return F.silu(x) * self.scale.view(1, -1, 1)


batch_size = 7
channels = 24
length = 301


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [channels]
