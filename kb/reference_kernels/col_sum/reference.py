import torch
import torch.nn as nn

ROWS = 300
COLS = 90


class Model(nn.Module):
    """Sum over the first dimension of a 2-D tensor: (ROWS, COLS) -> (COLS,)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sum(x, dim=0)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
