import math

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 40
IN_FEATURES = 100
OUT_FEATURES = 72
ACTIVATION = "gelu"


class Model(nn.Module):
    """Fully connected layer with bias followed by an activation: act(x @ W^T + b)."""

    def __init__(self, in_features, out_features, activation):
        super().__init__()
        self.activation = activation
        bound = 1.0 / math.sqrt(in_features)
        self.weight = nn.Parameter(torch.empty(out_features, in_features).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound))

    def forward(self, x):
        y = F.linear(x, self.weight, self.bias)
        if self.activation == "relu":
            y = torch.relu(y)
        elif self.activation == "gelu":
            y = F.gelu(y)
        return y


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, ACTIVATION]
