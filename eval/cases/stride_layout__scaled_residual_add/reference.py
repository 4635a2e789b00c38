import torch
import torch.nn as nn


class Model(nn.Module):
    """Scaled residual add: out = x * scale + residual."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return x * self.scale + residual


batch_size = 53
dim = 1999
scale = 0.5


def get_inputs():
    x = torch.randn(batch_size, dim)
    residual = torch.randn(batch_size, dim)
    return [x, residual]


def get_init_inputs():
    return [scale]
