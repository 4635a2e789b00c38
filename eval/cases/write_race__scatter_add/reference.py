import torch
import torch.nn as nn


class Model(nn.Module):
    """Weighted histogram: out[b] = sum of weights[i] over i with indices[i] == b (scatter_add)."""

    def __init__(self, num_bins):
        super().__init__()
        self.num_bins = num_bins

    def forward(self, indices, weights):
        out = torch.zeros(self.num_bins, dtype=weights.dtype, device=weights.device)
        return out.scatter_add(0, indices, weights)


num_bins = 97
num_items = 5003


def get_inputs():
    return [torch.randint(0, num_bins, (num_items,)), torch.randn(num_items)]


def get_init_inputs():
    return [num_bins]
