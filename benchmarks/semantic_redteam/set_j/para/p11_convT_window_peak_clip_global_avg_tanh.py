import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _window_max(t, k, s):
    return t.unfold(2, k, s).unfold(3, k, s).amax(dim=(-2, -1))


class Model(nn.Module):
    """Functional transposed conv, max-pool as unfold windows + amax, hardtanh as minimum/maximum with float bounds, spatial mean via adaptive_avg_pool2d, tanh."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, maxpool_kernel_size, maxpool_stride, hardtanh_min, hardtanh_max):
        super().__init__()
        self.conv_args = dict(stride=stride, padding=padding)
        self.pool = (maxpool_kernel_size, maxpool_stride)
        self.lo, self.hi = float(hardtanh_min), float(hardtanh_max)
        bound = 1.0 / math.sqrt(out_channels * kernel_size * kernel_size)
        self.weight = nn.Parameter(torch.empty(in_channels, out_channels, kernel_size, kernel_size).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(out_channels).uniform_(-bound, bound))

    def forward(self, x):
        y = F.conv_transpose2d(x, self.weight, self.bias, **self.conv_args)
        y = _window_max(y, *self.pool)
        y = torch.minimum(torch.maximum(y, y.new_tensor(self.lo)), y.new_tensor(self.hi))
        return torch.tanh(F.adaptive_avg_pool2d(y, 1))


BS = 128
C_IN = C_OUT = 64
HW = 256
K, STRIDE, PAD = 3, 1, 1
POOL_K, POOL_S = 2, 2
LO, HI = -1, 1


def get_inputs():
    return [torch.rand(BS, C_IN, HW, HW)]


def get_init_inputs():
    return [C_IN, C_OUT, K, STRIDE, PAD, POOL_K, POOL_S, LO, HI]
