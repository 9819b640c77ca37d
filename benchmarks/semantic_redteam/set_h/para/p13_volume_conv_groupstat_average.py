import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class GroupStandardize(nn.Module):
    """Group normalisation written out: statistics over (channels of a group, D, H, W)."""

    def __init__(self, groups, channels, eps=1e-5):
        super().__init__()
        self.groups = groups
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(channels))
        self.beta = nn.Parameter(torch.zeros(channels))

    def forward(self, t):
        b, c = t.shape[:2]
        g = t.reshape(b, self.groups, -1)
        mu = g.mean(dim=-1, keepdim=True)
        var = (g - mu).square().mean(dim=-1, keepdim=True)
        g = (g - mu) / torch.sqrt(var + self.eps)
        t = g.reshape(t.shape)
        shape = (1, c) + (1,) * (t.dim() - 2)
        return t * self.gamma.view(shape) + self.beta.view(shape)


class Model(nn.Module):
    """Volumetric convolution, group normalisation, then one scalar per sample: the average of all
    normalised activations."""

    def __init__(self, in_channels, out_channels, kernel_size, num_groups):
        super().__init__()
        bound = 1.0 / math.sqrt(in_channels * kernel_size ** 3)
        self.filters = nn.Parameter(
            torch.empty(out_channels, in_channels, kernel_size, kernel_size, kernel_size).uniform_(-bound, bound)
        )
        self.filter_bias = nn.Parameter(torch.empty(out_channels).uniform_(-bound, bound))
        self.norm = GroupStandardize(num_groups, out_channels)

    def forward(self, x):
        y = self.norm(F.conv3d(x, self.filters, self.filter_bias))
        flat = y.flatten(1)
        return flat.sum(dim=1) / flat.shape[1]


batch_size = 128
in_channels = 3
out_channels = 24
D, H, W = 24, 32, 32
kernel_size = 3
num_groups = 8


def get_inputs():
    return [torch.rand(batch_size, in_channels, D, H, W)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, num_groups]
