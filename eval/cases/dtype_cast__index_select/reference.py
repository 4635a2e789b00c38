import torch
import torch.nn as nn


class Model(nn.Module):
    """Embedding-style row lookup from a half-precision table: torch.index_select(table, 0, indices)."""

    def __init__(self):
        super().__init__()

    def forward(self, table, indices):
        return torch.index_select(table, 0, indices)


num_rows = 1000
emb_dim = 96
num_indices = 517


def get_inputs():
    return [torch.randn(num_rows, emb_dim, dtype=torch.float16), torch.randint(0, num_rows, (num_indices,))]


def get_init_inputs():
    return []
