import torch
import torch.nn as nn


class Model(nn.Module):
    """3-D transposed conv, BatchNorm3d, then each sample centred by its mean over channels and space."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, bias=True):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose3d(in_channels, out_channels, kernel_size, stride=stride, padding=padding, bias=bias)
        self.batch_norm = nn.BatchNorm3d(out_channels)

    def forward(self, x):
        x = self.conv_transpose(x)
        x = self.batch_norm(x)
        return x - torch.mean(x, dim=(1, 2, 3, 4), keepdim=True)


def get_inputs():
    return [torch.rand(2, 4, 4, 4, 4)]


def get_init_inputs():
    return [4, 6, 3, 2, 1]
