import math
import torch
import torch.nn as nn
import torch.nn.functional as F

POOL = 2  # non-overlapping 2x2x2 max pooling


def _block_max3d(t, p):
    b, c, d, h, w = t.shape
    d2, h2, w2 = d // p, h // p, w // p
    t = t[:, :, : d2 * p, : h2 * p, : w2 * p]
    t = t.reshape(b, c, d2, p, h2, p, w2, p)
    return t.amax(dim=(3, 5, 7))


class Model(nn.Module):
    """3-D convolution, 2x2x2 block maximum, division by a positive constant (applied after the max,
    which commutes with it), global average over the volume, learned per-channel bias, and a sum over
    the channel axis."""

    def __init__(self, in_channels, out_channels, kernel_size, divisor, bias_shape):
        super().__init__()
        kd, kh, kw = kernel_size
        bound = 1.0 / math.sqrt(in_channels * kd * kh * kw)
        self.weight = nn.Parameter(torch.empty(out_channels, in_channels, kd, kh, kw).uniform_(-bound, bound))
        self.conv_bias = nn.Parameter(torch.empty(out_channels).uniform_(-bound, bound))
        self.divisor = divisor
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        y = F.conv3d(x, self.weight, self.conv_bias)
        y = _block_max3d(y, POOL) / self.divisor
        y = y.mean(dim=(2, 3, 4), keepdim=True)
        y = y + self.bias
        return y.sum(dim=1)


batch_size = 4
in_channels = 4
out_channels = 8
depth = 8
height = width = 16
kernel_size = (3, 3, 3)
divisor = 2.0
bias_shape = (out_channels, 1, 1, 1)


def get_inputs():
    return [torch.rand(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, divisor, bias_shape]
