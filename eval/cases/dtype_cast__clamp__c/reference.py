import torch
import torch.nn as nn


class Model(nn.Module):
    """Clip integer timestamps (int64) to a window [min_val, max_val]."""

    def __init__(self, min_val: int, max_val: int):
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(x, min=self.min_val, max=self.max_val)


batch_size = 33
dim = 1531
min_val = -(2 ** 38)
max_val = 2 ** 38


def get_inputs():
    x = torch.randint(-(2 ** 40), 2 ** 40, (batch_size, dim), dtype=torch.int64)
    return [x]


def get_init_inputs():
    return [min_val, max_val]
