import torch
import torch.nn as nn


class SoftplusTanhGate(nn.Module):
    def forward(self, t):
        return t * torch.tanh(torch.logaddexp(t, torch.zeros_like(t)))


class Model(nn.Module):
    """Convolution whose bias absorbs two constant offsets, followed by a tanh-softplus self gate."""

    def __init__(self, in_channels, out_channels, kernel_size, offset_a, offset_b):
        super().__init__()
        conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        with torch.no_grad():
            conv.bias.sub_(offset_a + offset_b)  # fold both subtractions into the bias once
        self.body = nn.Sequential(conv, SoftplusTanhGate())

    def forward(self, x):
        return self.body(x)


batch_size = 128
in_channels = 8
out_channels = 64
height, width = 256, 256
kernel_size = 3
offset_a = 0.5
offset_b = 0.2


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, offset_a, offset_b]
