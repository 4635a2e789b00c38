import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 3
CHANNELS = 4
LENGTH = 101
KERNEL_SIZE = 4
STRIDE = 3
PADDING = 1


class Model(nn.Module):
    """1-D average pooling over (N, C, L); padded positions count as zeros (count_include_pad)."""

    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding

    def forward(self, x):
        return F.avg_pool1d(x, self.kernel_size, self.stride, self.padding)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [KERNEL_SIZE, STRIDE, PADDING]
