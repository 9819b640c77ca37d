import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def _gelu(t):
    return t * 0.5 * (1.0 + torch.erf(t / math.sqrt(2.0)))


def _group_norm(t, groups, weight, bias, eps=1e-5):
    n, c, h, w = t.shape
    g = t.view(n, groups, -1)
    mean = g.mean(-1, keepdim=True)
    var = g.var(-1, unbiased=False, keepdim=True)
    t = ((g - mean) / (var + eps).sqrt()).view(n, c, h, w)
    return t * weight.view(1, c, 1, 1) + bias.view(1, c, 1, 1)


class Model(nn.Module):
    """Strided transposed convolution (functional, explicit weights), exact GELU and group
    normalisation computed from per-group statistics."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, groups, num_groups):
        super().__init__()
        bound = 1.0 / math.sqrt(out_channels * kernel_size * kernel_size)
        self.up_weight = nn.Parameter(torch.empty(in_channels, out_channels, kernel_size, kernel_size).uniform_(-bound, bound))
        self.up_bias = nn.Parameter(torch.empty(out_channels).uniform_(-bound, bound))
        self.stride = stride
        self.groups = groups  # unused; the transposed convolution is dense
        self.num_groups = num_groups
        self.gn_weight = nn.Parameter(torch.ones(out_channels))
        self.gn_bias = nn.Parameter(torch.zeros(out_channels))

    def forward(self, x):
        y = F.conv_transpose2d(x, self.up_weight, self.up_bias, stride=self.stride)
        return _group_norm(_gelu(y), self.num_groups, self.gn_weight, self.gn_bias)


batch_size = 128
in_channels = 64
out_channels = 64
height = width = 256
kernel_size = 3
stride = 1
groups = 8
num_groups = 8


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, groups, num_groups]
