import torch
import torch.nn as nn


class Model(nn.Module):
    """Reverse cumulative sum: y[..., i] = sum of x[..., j] for j >= i along dim."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumsum(x.flip(self.dim), dim=self.dim).flip(self.dim)


batch_size = 23
input_size = 777
dim = 1


def get_inputs():
    return [torch.rand(batch_size, input_size)]


def get_init_inputs():
    return [dim]
