import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Transposed 3-D convolution, depth collapsed by its maximum, per-channel bias, channel softmax,
    tanh and a constant gain."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, scaling_factor):
        super().__init__()
        bound = 1.0 / math.sqrt(out_channels * kernel_size ** 3)
        self.weight = nn.Parameter(
            torch.empty(in_channels, out_channels, kernel_size, kernel_size, kernel_size).uniform_(-bound, bound)
        )
        self.conv_bias = nn.Parameter(torch.empty(out_channels).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.randn(1, out_channels, 1, 1, 1))
        self.stride, self.padding = stride, padding
        self.scaling_factor = scaling_factor

    def forward(self, x):
        y = F.conv_transpose3d(x, self.weight, self.conv_bias, stride=self.stride, padding=self.padding)
        y = y.amax(dim=2, keepdim=True) + self.bias
        y = torch.exp(y - torch.logsumexp(y, dim=1, keepdim=True))
        return torch.tanh(y) * self.scaling_factor


batch_size = 2
in_channels = 4
out_channels = 8
depth = 6
height = width = 8
kernel_size = 3
stride = 1
padding = 1
scaling_factor = 2.0


def get_inputs():
    return [torch.rand(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, scaling_factor]
