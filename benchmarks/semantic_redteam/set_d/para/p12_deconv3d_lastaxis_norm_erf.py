import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class _LastAxisStandardise(nn.Module):
    def __init__(self, width, eps):
        super().__init__()
        self.eps = eps
        self.g = nn.Parameter(torch.ones(width))
        self.b = nn.Parameter(torch.zeros(width))

    def forward(self, t):
        mu = t.mean(dim=-1, keepdim=True)
        d = t - mu
        var = d.pow(2).mean(dim=-1, keepdim=True)
        return d * torch.rsqrt(var + self.eps) * self.g + self.b


class Model(nn.Module):
    """Strided volumetric up-convolution, standardisation along the innermost axis, erf-based Gaussian gating, gain."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, bias=True, eps=1e-5, scaling_factor=1.0):
        super().__init__()
        k = kernel_size
        bound = 1.0 / math.sqrt(out_channels * k ** 3)
        self.weight = nn.Parameter(torch.empty(in_channels, out_channels, k, k, k).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(out_channels).uniform_(-bound, bound)) if bias else None
        self.stride, self.padding = stride, padding
        self.norm = _LastAxisStandardise(out_channels, eps)
        self.gain = scaling_factor

    def forward(self, x):
        y = F.conv_transpose3d(x, self.weight, self.bias, stride=self.stride, padding=self.padding)
        y = self.norm(y)
        y = 0.5 * y * (1.0 + torch.erf(y / math.sqrt(2.0)))
        return y * self.gain


def get_inputs():
    return [torch.rand(2, 32, 2, 3, 32)]


def get_init_inputs():
    return [32, 64, 4, 2, 1, True, 1e-5, 1.0]
