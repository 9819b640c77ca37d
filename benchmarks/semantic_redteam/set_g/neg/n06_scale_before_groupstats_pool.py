import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Convolution, a per-channel scale applied BEFORE group normalisation, block max, clamp to [lo, hi]."""

    def __init__(self, c_in, c_out, k, groups, scale_shape, block, lo, hi):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, k)
        self.gn = nn.GroupNorm(groups, c_out)
        self.scale = nn.Parameter(torch.ones(scale_shape))
        self.block, self.lo, self.hi = block, lo, hi

    def forward(self, x):
        y = self.gn(self.conv(x) * self.scale)
        return F.max_pool2d(y, self.block).clamp(self.lo, self.hi)


def get_inputs():
    return [torch.rand(4, 6, 30, 30)]


def get_init_inputs():
    return [6, 24, 3, 6, (24, 1, 1), 2, 0.0, 1.0]
