import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, r):
        return (x + r) * 0.5


def get_inputs():
    return [torch.randn(1100), torch.randn(1100)]


def get_init_inputs():
    return []
