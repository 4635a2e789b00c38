import torch
import torch.nn as nn

NUM_VALUES = 3000
NUM_BINS = 37


class Model(nn.Module):
    """Count of each value in 0..num_bins-1 (torch.bincount with minlength), int64 counts."""

    def __init__(self, num_bins):
        super().__init__()
        self.num_bins = num_bins

    def forward(self, values):
        return torch.bincount(values, minlength=self.num_bins)


def get_inputs():
    return [torch.randint(0, NUM_BINS, (NUM_VALUES,))]


def get_init_inputs():
    return [NUM_BINS]
