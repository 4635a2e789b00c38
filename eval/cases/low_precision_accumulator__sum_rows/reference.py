import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum reduction over the last dimension."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim)


batch_size = 31
dim1 = 4000
reduce_dim = -1


def get_inputs():
    x = torch.randn(batch_size, dim1)
    return [x]


def get_init_inputs():
    return [reduce_dim]
