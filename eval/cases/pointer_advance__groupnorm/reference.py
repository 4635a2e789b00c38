import torch
import torch.nn as nn


class Model(nn.Module):
    """Group normalization with a per-channel affine transform."""

    def __init__(self, num_groups, num_channels):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_channels, eps=1e-5)

    def forward(self, x):
        return self.gn(x)


batch_size = 3
num_channels = 12
num_groups = 4
height = 23
width = 21


def get_inputs():
    return [torch.randn(batch_size, num_channels, height, width)]


def get_init_inputs():
    return [num_groups, num_channels]
