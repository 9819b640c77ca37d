import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def _softmax(t, dim):
    t = t - t.amax(dim=dim, keepdim=True)
    e = t.exp()
    return e / e.sum(dim=dim, keepdim=True)


class Model(nn.Module):
    """3-D convolution, minimum over the axis `dim`, then a normalised exponential over the last
    (width) axis of the resulting feature map."""

    def __init__(self, in_channels, out_channels, kernel_size, dim):
        super().__init__()
        bound = 1.0 / math.sqrt(in_channels * kernel_size ** 3)
        self.weight = nn.Parameter(
            torch.empty(out_channels, in_channels, kernel_size, kernel_size, kernel_size).uniform_(-bound, bound)
        )
        self.bias = nn.Parameter(torch.empty(out_channels).uniform_(-bound, bound))
        self.dim = dim

    def forward(self, x):
        y = F.conv3d(x, self.weight, self.bias)
        y = y.amin(dim=self.dim)
        return _softmax(y, dim=-1)


batch_size = 2
in_channels = 3
out_channels = 8
D, H, W = 8, 10, 10
kernel_size = 3
dim = 2


def get_inputs():
    return [torch.rand(batch_size, in_channels, D, H, W)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, dim]
