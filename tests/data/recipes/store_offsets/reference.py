import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.clamp(x, min=-0.5, max=0.5) * 2.0


def get_inputs():
    return [torch.randn(6, 300)]


def get_init_inputs():
    return []
