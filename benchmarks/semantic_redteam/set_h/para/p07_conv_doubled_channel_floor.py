import torch
import torch.nn as nn

OUTPUT_GAIN = 2.0  # fixed gain applied to the convolution response


class Gain(nn.Module):
    def __init__(self, g):
        super().__init__()
        self.g = g

    def forward(self, x):
        return x * self.g


class ChannelFloor(nn.Module):
    """Smallest response over the channel axis, kept as a singleton channel."""

    def forward(self, x):
        return x.amin(dim=1, keepdim=True)


class Model(nn.Module):
    """Convolution -> fixed gain -> minimum over channels, as one sequential pipeline."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, kernel_size),
            Gain(OUTPUT_GAIN),
            ChannelFloor(),
        )

    def forward(self, x):
        return self.body(x)


batch_size = 8
in_channels = 16
out_channels = 32
height = width = 32
kernel_size = 3


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
