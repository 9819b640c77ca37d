import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Functional transposed conv with add_value folded into its bias; min(x, 0) as -relu(-x); erf-form GELU with multiply_value folded into its 0.5 factor."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, add_value, multiply_value):
        super().__init__()
        self.stride = stride
        bound = 1.0 / math.sqrt(out_channels * kernel_size * kernel_size)
        self.weight = nn.Parameter(torch.empty(in_channels, out_channels, kernel_size, kernel_size).uniform_(-bound, bound))
        self.bias_plus = nn.Parameter(torch.empty(out_channels).uniform_(-bound, bound) + add_value)
        self.half_gain = 0.5 * multiply_value

    def forward(self, x):
        y = F.conv_transpose2d(x, self.weight, self.bias_plus, stride=self.stride)
        y = -F.relu(-y)
        return self.half_gain * y * (1.0 + torch.erf(y / math.sqrt(2.0)))


def get_inputs():
    return [torch.rand(2, 8, 7, 7)]


def get_init_inputs():
    return [8, 12, 3, 2, 0.3, 1.5]
