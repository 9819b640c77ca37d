import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Strided transposed convolution, softmax over channels written out, per-channel offset,
    fixed gain of 2 and a logistic output."""

    GAIN = 2.0

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding, bias_shape):
        super().__init__()
        self.stride = stride
        self.padding = padding
        self.output_padding = output_padding
        bound = 1.0 / math.sqrt(out_channels * kernel_size * kernel_size)
        self.weight = nn.Parameter(
            torch.empty(in_channels, out_channels, kernel_size, kernel_size).uniform_(-bound, bound)
        )
        self.conv_bias = nn.Parameter(torch.empty(out_channels).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        y = F.conv_transpose2d(
            x, self.weight, self.conv_bias, stride=self.stride, padding=self.padding,
            output_padding=self.output_padding,
        )
        y = torch.exp(y - y.amax(dim=1, keepdim=True))
        y = y / y.sum(dim=1, keepdim=True)
        y = (y + self.bias) * self.GAIN
        return 1.0 / (1.0 + torch.exp(-y))


batch_size = 4
in_channels = 16
out_channels = 32
height, width = 12, 12
kernel_size = 4
stride = 2
padding = 1
output_padding = 1
bias_shape = (out_channels, 1, 1)


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, output_padding, bias_shape]
