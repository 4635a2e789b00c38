import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """HardSwish activation: x * relu6(x + 3) / 6."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.hardswish(x)


batch_size = 37
dim = 1031


def get_inputs():
    x = torch.randn(batch_size, dim) * 3.0
    return [x]


def get_init_inputs():
    return []
