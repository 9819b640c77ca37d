import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Convolution whose filters are drawn at `scaling_factor` times the usual scale, tanh, per-channel
    offset, non-overlapping max pooling.

    The gain sits inside the tanh: tanh(s*u) saturates where s*tanh(u) is unbounded by 1 in
    magnitude, and tanh(a*u + c) = s*tanh(u) has no solution (a, c) for s != 1 (ranges differ),
    so no tie of the filters / offsets reproduces the post-tanh scaling.
    """

    def __init__(self, in_channels, out_channels, kernel_size, scaling_factor, bias_shape, pool_kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        with torch.no_grad():
            self.conv.weight.mul_(scaling_factor)
            self.conv.bias.mul_(scaling_factor)
        self.offset = nn.Parameter(torch.randn(bias_shape))
        self.pool = pool_kernel_size

    def forward(self, x):
        return F.max_pool2d(torch.tanh(self.conv(x)) + self.offset, self.pool)


def get_inputs():
    return [torch.rand(2, 3, 14, 14)]


def get_init_inputs():
    return [3, 8, 3, 2.0, (8, 1, 1), 2]
