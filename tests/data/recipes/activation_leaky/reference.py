import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, negative_slope=0.1):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        return torch.nn.functional.leaky_relu(x, self.negative_slope)


def get_inputs():
    return [torch.randn(1500)]


def get_init_inputs():
    return [0.1]
