import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Transposed 3-D convolution (no bias), ReLU, then normalisation with affine parameters; the
    statistics are taken per channel over (D, H, W). `groups` is kept for interface compatibility."""

    def __init__(self, in_channels, out_channels, kernel_size, groups, bias=False):
        super().__init__()
        bound = 1.0 / math.sqrt(out_channels * kernel_size ** 3)
        self.weight = nn.Parameter(
            torch.empty(in_channels, out_channels, kernel_size, kernel_size, kernel_size).uniform_(-bound, bound)
        )
        self.groups = groups
        self.gamma = nn.Parameter(torch.ones(out_channels))
        self.beta = nn.Parameter(torch.zeros(out_channels))

    def forward(self, x):
        y = F.relu(F.conv_transpose3d(x, self.weight))
        mu = y.mean(dim=(2, 3, 4), keepdim=True)
        var = y.var(dim=(2, 3, 4), unbiased=False, keepdim=True)
        y = (y - mu) / torch.sqrt(var + 1e-5)
        return y * self.gamma.view(1, -1, 1, 1, 1) + self.beta.view(1, -1, 1, 1, 1)


batch_size = 2
in_channels = 8
out_channels = 16
D, H, W = 6, 6, 6
kernel_size = 3
groups = 4
bias = False


def get_inputs():
    return [torch.rand(batch_size, in_channels, D, H, W)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, groups, bias]
