import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Convolution with filters stored pre-divided by `divisor`, then a leaky rectifier of slope 0.02.

    Positive outputs agree with divide-then-leaky(0.01); negative outputs are twice as large in
    magnitude. Matching the positive part forces the tie to be exactly the pre-division, and then
    the negative part differs by 0.01*|y|, which no (positive-homogeneous) rescaling removes.
    """

    def __init__(self, in_channels, out_channels, kernel_size, divisor):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        with torch.no_grad():
            self.conv.weight.div_(divisor)
            self.conv.bias.div_(divisor)

    def forward(self, x):
        return F.leaky_relu(self.conv(x), 0.02)


def get_inputs():
    return [torch.rand(2, 4, 10, 10)]


def get_init_inputs():
    return [4, 12, 3, 2]
