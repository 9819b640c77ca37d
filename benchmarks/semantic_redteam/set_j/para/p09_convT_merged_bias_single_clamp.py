import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Functional transposed conv with conv bias and added bias merged into one shift; clamp -> scale -> clamp -> divide collapsed into one clamp to [0, min(1, 1/s)]."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding, bias_shape, scaling_factor):
        super().__init__()
        self.cfg = dict(stride=stride, padding=padding, output_padding=output_padding)
        bound = 1.0 / math.sqrt(out_channels * kernel_size * kernel_size)
        self.weight = nn.Parameter(torch.empty(in_channels, out_channels, kernel_size, kernel_size).uniform_(-bound, bound))
        conv_b = torch.empty(out_channels).uniform_(-bound, bound)
        self.shift = nn.Parameter(conv_b + torch.randn(bias_shape).reshape(-1))
        self.ceiling = min(1.0, 1.0 / scaling_factor)

    def forward(self, x):
        y = F.conv_transpose2d(x, self.weight, self.shift, **self.cfg)
        return y.clamp(0.0, self.ceiling)


BATCH = 128
C_IN = C_OUT = 64
SIDE = 128
KERNEL, STRIDE, PAD, OUT_PAD = 3, 2, 1, 1
SHIFT_SHAPE = (C_OUT, 1, 1)
SCALE = 2.0


def get_inputs():
    return [torch.rand(BATCH, C_IN, SIDE, SIDE)]


def get_init_inputs():
    return [C_IN, C_OUT, KERNEL, STRIDE, PAD, OUT_PAD, SHIFT_SHAPE, SCALE]
