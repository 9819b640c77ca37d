import math
import torch
import torch.nn as nn


class ActivationChain(nn.Module):
    """relu -> leaky relu (slope 0.01) -> exact (erf) GELU -> sigmoid."""

    def forward(self, x):
        x = torch.clamp_min(x, 0.0)
        x = torch.where(x > 0, x, 0.01 * x)
        x = 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))
        return torch.sigmoid(x)


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.features = nn.Sequential(nn.Conv3d(in_channels, out_channels, kernel_size), ActivationChain())
        self.offset = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return self.features(x) + self.offset


batch_size = 64
in_channels = 8
out_channels = 32
depth, height, width = 32, 64, 64
kernel_size = 3
bias_shape = (out_channels, 1, 1, 1)


def get_inputs():
    return [torch.rand(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, bias_shape]
