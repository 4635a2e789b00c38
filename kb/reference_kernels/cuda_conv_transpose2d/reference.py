import torch
import torch.nn as nn

BATCH = 2
IN_CHANNELS = 4
OUT_CHANNELS = 6
HEIGHT = 9
WIDTH = 11
KERNEL = 3
STRIDE = 2
PADDING = 1
OUTPUT_PADDING = 1
DILATION = 1


class Model(nn.Module):
    """Transposed 2-D convolution over NCHW with bias, stride, padding, output padding and dilation."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding, dilation):
        super().__init__()
        self.conv_t = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                                         output_padding=output_padding, dilation=dilation, bias=True)

    def forward(self, x):
        return self.conv_t(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL, STRIDE, PADDING, OUTPUT_PADDING, DILATION]
