import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv -> per-channel shift and gain -> logistic -> grouped standardization (all functional)."""

    def __init__(self, in_channels, out_channels, kernel_size, num_groups, bias_shape, scale_shape):
        super().__init__()
        conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.w = conv.weight
        self.cb = conv.bias
        self.shift = nn.Parameter(torch.randn(bias_shape))
        self.gain = nn.Parameter(torch.randn(scale_shape))
        self.gn_w = nn.Parameter(torch.ones(out_channels))
        self.gn_b = nn.Parameter(torch.zeros(out_channels))
        self.g = num_groups

    def forward(self, x):
        y = F.conv2d(x, self.w, self.cb)
        y = (y + self.shift) * self.gain
        y = 1.0 / (1.0 + torch.exp(-y))
        n, c, h, w = y.shape
        t = y.reshape(n, self.g, -1)
        mu = t.mean(dim=2, keepdim=True)
        var = t.var(dim=2, keepdim=True, unbiased=False)
        t = (t - mu) * torch.rsqrt(var + 1e-5)
        y = t.reshape(n, c, h, w)
        return y * self.gn_w.view(1, c, 1, 1) + self.gn_b.view(1, c, 1, 1)


batch_size = 16
in_channels = 8
out_channels = 32
height = width = 128
kernel_size = 3
num_groups = 8
bias_shape = (out_channels, 1, 1)
scale_shape = (out_channels, 1, 1)


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, num_groups, bias_shape, scale_shape]
