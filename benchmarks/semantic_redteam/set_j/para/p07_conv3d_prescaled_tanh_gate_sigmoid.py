import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """3-D conv with the per-channel scale folded into kernel and bias at construction, tanh, flat per-channel gate, sigmoid as 0.5 + 0.5*tanh(x/2)."""

    def __init__(self, in_channels, out_channels, kernel_size, scaling_factor, bias_shape):
        super().__init__()
        k = kernel_size
        bound = 1.0 / math.sqrt(in_channels * k ** 3)
        w = torch.empty(out_channels, in_channels, k, k, k).uniform_(-bound, bound)
        b = torch.empty(out_channels).uniform_(-bound, bound)
        scale = torch.randn(bias_shape).reshape(-1)
        self.kernel = nn.Parameter(w * scale.view(-1, 1, 1, 1, 1))
        self.kernel_bias = nn.Parameter(b * scale)
        self.gate = nn.Parameter(torch.randn(bias_shape).reshape(-1))

    def forward(self, x):
        y = torch.tanh(F.conv3d(x, self.kernel, self.kernel_bias))
        y = y * self.gate.view(1, -1, 1, 1, 1)
        return 0.5 + 0.5 * torch.tanh(0.5 * y)


BATCH = 128
C_IN, C_OUT = 3, 16
VOLUME = (16, 64, 64)
K = 3
SCALE_ARG = 2
GATE_SHAPE = (C_OUT, 1, 1, 1)


def get_inputs():
    return [torch.rand(BATCH, C_IN, *VOLUME)]


def get_init_inputs():
    return [C_IN, C_OUT, K, SCALE_ARG, GATE_SHAPE]
