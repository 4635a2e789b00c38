import torch
import torch.nn as nn

ROWS = 13
COLS = 700


class Model(nn.Module):
    """Index of the maximum over the last dimension: (ROWS, COLS) -> (ROWS,) int64."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.argmax(x, dim=1)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
