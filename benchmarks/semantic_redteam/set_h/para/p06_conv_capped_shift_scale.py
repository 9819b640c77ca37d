import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Valid 2-D convolution, values capped from above at `cap`, then a per-channel shift and a global
    gain. The gain is distributed over the sum: (y + s) * g == y * g + s * g."""

    def __init__(self, in_channels, out_channels, kernel_size, cap, shift_shape, gain):
        super().__init__()
        fan_in = in_channels * kernel_size * kernel_size
        bound = 1.0 / math.sqrt(fan_in)
        self.weight = nn.Parameter(torch.empty(out_channels, in_channels, kernel_size, kernel_size).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(out_channels).uniform_(-bound, bound))
        self.shift = nn.Parameter(torch.randn(shift_shape))
        self.cap = cap
        self.gain = gain

    def forward(self, x):
        y = F.conv2d(x, self.weight, self.bias)
        y = y.clamp(max=self.cap)
        return y * self.gain + self.shift * self.gain


batch_size = 128
in_channels = 64
out_channels = 128
height = width = 128
kernel_size = 3
cap = 0.5
shift_shape = (out_channels, 1, 1)
gain = 2.0


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, cap, shift_shape, gain]
