import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Strided, padded transposed 3-D convolution, divided by a constant and floored at `min_value`."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, min_value, divisor):
        super().__init__()
        bound = 1.0 / math.sqrt(out_channels * kernel_size ** 3)
        self.weight = nn.Parameter(
            torch.empty(in_channels, out_channels, kernel_size, kernel_size, kernel_size).uniform_(-bound, bound)
        )
        self.bias = nn.Parameter(torch.empty(out_channels).uniform_(-bound, bound))
        self.stride, self.padding = stride, padding
        self.min_value, self.divisor = min_value, divisor

    def forward(self, x):
        y = F.conv_transpose3d(x, self.weight, self.bias, stride=self.stride, padding=self.padding)
        return (y / self.divisor).clamp(min=self.min_value)


batch_size = 2
in_channels = 8
out_channels = 16
depth, height, width = 5, 6, 6
kernel_size = 3
stride = 2
padding = 1
min_value = -0.2
divisor = 2.0


def get_inputs():
    return [torch.rand(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, min_value, divisor]
