import torch
import torch.nn as nn


class Model(nn.Module):
    """Index of the maximum along a dimension (torch.argmax, int64 output)."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.argmax(x, dim=self.dim)


batch_size = 67
dim1 = 1531
dim = 1


def get_inputs():
    return [torch.randn(batch_size, dim1)]


def get_init_inputs():
    return [dim]
