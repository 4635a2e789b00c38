import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, eps=1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        mean = x.mean(dim=1, keepdim=True)
        var = x.var(dim=1, keepdim=True, unbiased=False)
        return (x - mean) / torch.sqrt(var + self.eps)


def get_inputs():
    return [torch.randn(9, 16)]


def get_init_inputs():
    return []
