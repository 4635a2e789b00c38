import torch
import torch.nn as nn


class Model(nn.Module):
    """Batched transpose materialised as a contiguous copy: (B, M, N) -> (B, N, M)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.transpose(1, 2).contiguous()


batch_size = 3
rows = 150
cols = 97


def get_inputs():
    return [torch.randn(batch_size, rows, cols)]


def get_init_inputs():
    return []
