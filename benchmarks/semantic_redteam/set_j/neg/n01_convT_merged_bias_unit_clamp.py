import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Functional transposed conv with conv bias and added bias merged into one shift, output clamped to [0, 1]."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding, bias_shape, scaling_factor):
        super().__init__()
        self.cfg = dict(stride=stride, padding=padding, output_padding=output_padding)
        bound = 1.0 / math.sqrt(out_channels * kernel_size * kernel_size)
        self.weight = nn.Parameter(torch.empty(in_channels, out_channels, kernel_size, kernel_size).uniform_(-bound, bound))
        conv_b = torch.empty(out_channels).uniform_(-bound, bound)
        self.shift = nn.Parameter(conv_b + torch.randn(bias_shape).reshape(-1))
        self.scaling_factor = scaling_factor

    def forward(self, x):
        y = F.conv_transpose2d(x, self.weight, self.shift, **self.cfg)
        y = y.clamp(0.0, 1.0) * self.scaling_factor
        return y.clamp(0.0, 1.0 * self.scaling_factor) / self.scaling_factor


def get_inputs():
    return [torch.rand(2, 8, 6, 6)]


def get_init_inputs():
    return [8, 8, 3, 2, 1, 1, (8, 1, 1), 2.0]
