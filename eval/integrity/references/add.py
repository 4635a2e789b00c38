import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Elementwise sum of two tensors."""

    def __init__(self):
        super().__init__()


    def forward(self, a, b):
        return a + b


rows = 33
cols = 517


def get_inputs():
    return [torch.randn(rows, cols), torch.randn(rows, cols)]


def get_init_inputs():
    return []
