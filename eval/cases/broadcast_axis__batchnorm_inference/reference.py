import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """BatchNorm2d in inference mode: (x - running_mean[c]) / sqrt(running_var[c] + eps) * weight[c] + bias[c]."""

    def __init__(self, num_features, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_features) * 0.5 + 1.0)
        self.bias = nn.Parameter(torch.randn(num_features) * 0.5)
        self.register_buffer("running_mean", torch.randn(num_features) * 0.5)
        self.register_buffer("running_var", torch.rand(num_features) + 0.5)
        self.eps = eps

    def forward(self, x):
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            training=False, eps=self.eps)


batch_size = 6
num_features = 19
height = 17
width = 23


def get_inputs():
    return [torch.randn(batch_size, num_features, height, width)]


def get_init_inputs():
    return [num_features]
