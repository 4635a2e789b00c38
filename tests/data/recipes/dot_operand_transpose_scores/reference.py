import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k):
        return (q @ k.t()) * 0.125


def get_inputs():
    return [torch.randn(40, 16), torch.randn(24, 16)]


def get_init_inputs():
    return []
