import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Fractionally-strided (stride 1) deconvolution as a full correlation with the flipped kernel."""

    def __init__(self, c_in: int, c_out: int, k: int):
        super().__init__()
        self.kernel = nn.Parameter(torch.randn(c_in, c_out, k, k) * 0.05)
        self.k = k

    def forward(self, x):
        w = self.kernel.flip(2, 3).transpose(0, 1)
        p = self.k - 1
        return F.conv2d(F.pad(x, (p, p, p, p)), w)


batch_size = 8
in_channels = 64
out_channels = 64
kernel_size = 3
height = 1024
width = 1024


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
