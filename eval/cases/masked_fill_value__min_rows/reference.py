import torch
import torch.nn as nn


class Model(nn.Module):
    """Min reduction over one dimension of a non-negative tensor."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.min(x, dim=self.dim)[0]


batch_size = 45
dim1 = 777
reduce_dim = 1


def get_inputs():
    x = torch.rand(batch_size, dim1)
    return [x]


def get_init_inputs():
    return [reduce_dim]
