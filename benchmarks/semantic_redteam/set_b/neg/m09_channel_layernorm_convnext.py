import torch
import torch.nn as nn


class Model(nn.Module):
    """ConvNeXt-style channel LayerNorm: each pixel's channel vector standardized, then a per-channel affine."""

    def __init__(self, channels, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.eps = eps

    def forward(self, x):
        mu = x.mean(dim=1, keepdim=True)
        var = ((x - mu) ** 2).mean(dim=1, keepdim=True)
        y = (x - mu) / torch.sqrt(var + self.eps)
        return y * self.weight[:, None, None] + self.bias[:, None, None]


batch_size = 16
channels = 96
height = 56
width = 56


def get_inputs():
    return [torch.rand(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels]
