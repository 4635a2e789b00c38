import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Max over dimension 1."""

    def __init__(self):
        super().__init__()


    def forward(self, x):
        return torch.max(x, dim=1)[0]


batch_size = 32
dim = 1000


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
