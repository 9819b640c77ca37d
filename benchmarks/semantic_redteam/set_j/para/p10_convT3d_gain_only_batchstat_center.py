import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """ConvTranspose3d + training-mode BatchNorm + spatial centring fused: terms constant per channel (conv bias, BN shift, batch mean) cancel in the centring, so only the batch variance and the BN gain remain."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, bias=True):
        super().__init__()
        self.stride, self.padding = stride, padding
        bound = 1.0 / math.sqrt(out_channels * kernel_size ** 3)
        self.weight = nn.Parameter(torch.empty(in_channels, out_channels, kernel_size, kernel_size, kernel_size).uniform_(-bound, bound))
        self.gain = nn.Parameter(torch.ones(out_channels))
        self.eps = 1e-5

    def forward(self, x):
        y = F.conv_transpose3d(x, self.weight, None, stride=self.stride, padding=self.padding)
        var = y.var(dim=(0, 2, 3, 4), unbiased=False, keepdim=True)
        centred = y - y.mean(dim=(2, 3, 4), keepdim=True)
        return centred * (self.gain.view(1, -1, 1, 1, 1) * torch.rsqrt(var + self.eps))


N = 16
CIN, COUT = 16, 32
D, H, W = 16, 32, 32
KSZ, STRIDE, PAD = 3, 2, 1


def get_inputs():
    return [torch.rand(N, CIN, D, H, W)]


def get_init_inputs():
    return [CIN, COUT, KSZ, STRIDE, PAD]
