import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Per-channel spatial filtering, one small kernel per channel."""

    def __init__(self, channels: int, k: int, stride: int = 1, padding: int = 0):
        super().__init__()
        self.kernels = nn.ParameterList([nn.Parameter(torch.randn(1, 1, k, k)) for _ in range(channels)])
        self.stride, self.padding = stride, padding

    def forward(self, x):
        outs = []
        for c, w in enumerate(self.kernels):
            outs.append(F.conv2d(x[:, c : c + 1], w, stride=self.stride, padding=self.padding))
        return torch.cat(outs, dim=1)


batch_size = 16
in_channels = 64
kernel_size = 3
width = 512
height = 512
stride = 1
padding = 0


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, kernel_size, stride, padding]
