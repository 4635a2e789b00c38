import torch
import torch.nn as nn

ROWS = 9
COLS = 1500


class Model(nn.Module):
    """Inclusive prefix sum along the last dimension of a 2-D tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.cumsum(x, dim=1)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
