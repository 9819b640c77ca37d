import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """1D convolution (no bias) expressed as sliding windows + einsum contraction."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.k = kernel_size
        self.weight = nn.Parameter(torch.empty(out_channels, in_channels, kernel_size))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))

    def forward(self, x):
        win = x.unfold(2, self.k, 1)  # (B, Cin, L', K)
        return torch.einsum("bclk,ock->bol", win, self.weight)


batch_size = 16
in_channels = 64
out_channels = 128
kernel_size = 3
length = 8192


def get_inputs():
    return [torch.rand(batch_size, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
