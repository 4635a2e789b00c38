import torch
import torch.nn as nn
import torch.nn.functional as F

ROWS = 21
COLS = 450


class Model(nn.Module):
    """Rows scaled to unit L2 norm: x / max(||x||_2, eps)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.normalize(x, p=2.0, dim=1, eps=1e-12)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
