import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Convolution, MAX pooling (not average), sigmoid, sum over channels and space."""

    def __init__(self, in_channels, out_channels, kernel_size, pool_kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.pool = pool_kernel_size

    def forward(self, x):
        x = F.max_pool2d(self.conv(x), self.pool)
        return torch.sigmoid(x).sum(dim=[1, 2, 3])


def get_inputs():
    return [torch.rand(3, 4, 14, 14)]


def get_init_inputs():
    return [4, 8, 3, 2]
