import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Matmul + bias + exact (erf) GELU: gelu(x @ W^T + b)."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features) / in_features ** 0.5)
        self.bias = nn.Parameter(torch.randn(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x @ self.weight.t() + self.bias)


batch_size = 40
in_features = 120
out_features = 70


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features]
