import torch
import torch.nn as nn
import torch.nn.functional as F

ROWS = 37
COLS = 123


class Model(nn.Module):
    """Mean squared error between two tensors of the same shape (a 0-d result)."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return F.mse_loss(predictions, targets)


def get_inputs():
    return [torch.randn(ROWS, COLS), torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
