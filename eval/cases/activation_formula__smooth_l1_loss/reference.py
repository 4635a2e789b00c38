import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Smooth L1 loss with a transition point beta, mean reduction."""

    def __init__(self, beta):
        super().__init__()
        self.beta = beta

    def forward(self, predictions, targets):
        return F.smooth_l1_loss(predictions, targets, beta=self.beta)


batch_size = 57
dim = 1001
beta = 0.5


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return [beta]
