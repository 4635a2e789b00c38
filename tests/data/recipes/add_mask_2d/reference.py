import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.tanh(x) * 0.0 + x.abs()


def get_inputs():
    return [torch.randn(21, 35)]


def get_init_inputs():
    return []
