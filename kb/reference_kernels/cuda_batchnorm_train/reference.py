import torch
import torch.nn as nn

BATCH = 8
CHANNELS = 12
HEIGHT = 20
WIDTH = 19


class Model(nn.Module):
    """BatchNorm2d in training mode: normalise with the batch's statistics, update the running ones."""

    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS]
