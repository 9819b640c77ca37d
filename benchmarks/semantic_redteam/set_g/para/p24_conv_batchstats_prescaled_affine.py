import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Convolution, normalisation by the batch's per-channel statistics, with the final multiplier folded
    into the per-channel gain and shift (training-mode statistics)."""

    def __init__(self, cin, cout, k, factor):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k)
        self.gamma = nn.Parameter(torch.full((cout,), float(factor)))
        self.beta = nn.Parameter(torch.zeros(cout))

    def forward(self, x):
        y = self.conv(x)
        mu = y.mean(dim=(0, 2, 3), keepdim=True)
        var = ((y - mu) ** 2).mean(dim=(0, 2, 3), keepdim=True)
        yhat = (y - mu) / torch.sqrt(var + 1e-5)
        return yhat * self.gamma.view(1, -1, 1, 1) + self.beta.view(1, -1, 1, 1)


def get_inputs():
    return [torch.rand(5, 4, 14, 14)]


def get_init_inputs():
    return [4, 12, 3, 2.0]
