import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over the last dimension with a temperature: softmax(x / T)."""

    def __init__(self, temperature: float):
        super().__init__()
        self.temperature = temperature

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x / self.temperature, dim=-1)


batch_size = 24
dim = 777
temperature = 0.7


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [temperature]
