import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Causal depthwise 1-D convolution followed by a running maximum over time."""

    def __init__(self, channels, k):
        super().__init__()
        self.conv = nn.Conv1d(channels, channels, k, groups=channels)
        self.k = k

    def forward(self, x):
        y = self.conv(F.pad(x, (self.k - 1, 0)))
        return torch.cummax(y, dim=-1).values


batch_size, channels, length, k = 32, 256, 2048, 4


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [channels, k]
