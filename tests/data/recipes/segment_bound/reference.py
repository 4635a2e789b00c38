import torch
import torch.nn as nn


class Model(nn.Module):
    """Segment sums of a CSR-style ragged array: out[i] = values[ptr[i]:ptr[i+1]].sum()."""

    def __init__(self):
        super().__init__()

    def forward(self, values, ptr):
        lengths = (ptr[1:] - ptr[:-1]).tolist()
        return torch.stack([seg.sum() for seg in torch.split(values, lengths)])


def get_inputs():
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(1, 40, (17,), generator=g)
    ptr = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    return [torch.randn(int(ptr[-1])), ptr]


def get_init_inputs():
    return []
