import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """1-D transposed convolution ("deconvolution") with dilated taps, written with an explicit
    weight tensor of shape (in_channels, out_channels, kernel_size) and F.conv_transpose1d."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, bias=False):
        super().__init__()
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        bound = 1.0 / math.sqrt(out_channels * kernel_size)
        self.weight = nn.Parameter(torch.empty(in_channels, out_channels, kernel_size).uniform_(-bound, bound))
        if bias:
            self.bias = nn.Parameter(torch.empty(out_channels).uniform_(-bound, bound))
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        # output length: (L - 1) * stride - 2 * padding + dilation * (kernel_size - 1) + 1
        return F.conv_transpose1d(
            x, self.weight, self.bias, stride=self.stride, padding=self.padding, dilation=self.dilation
        )


batch_size = 32
in_channels = 32
out_channels = 64
kernel_size = 5
length = 131072
stride = 1
padding = 0
dilation = 3


def get_inputs():
    return [torch.rand(batch_size, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, dilation]
