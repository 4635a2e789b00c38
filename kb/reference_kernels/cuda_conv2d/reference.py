import torch
import torch.nn as nn

BATCH = 2
IN_CHANNELS = 3
OUT_CHANNELS = 8
HEIGHT = 17
WIDTH = 21
KERNEL = 3
STRIDE = 2
PADDING = 1
DILATION = 1


class Model(nn.Module):
    """2-D convolution over NCHW with bias, stride, padding and dilation."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                              dilation=dilation, bias=True)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL, STRIDE, PADDING, DILATION]
