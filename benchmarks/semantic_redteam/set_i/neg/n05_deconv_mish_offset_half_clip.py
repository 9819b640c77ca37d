import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Transposed convolution, Mish, constant offset, hard clip to [-0.5, 0.5], scaling."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding, add_value, scale):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride, padding,
                                                 output_padding)
        self.add_value = add_value
        self.scale = scale

    def forward(self, x):
        x = self.conv_transpose(x)
        x = x * torch.tanh(F.softplus(x))
        x = x + self.add_value
        x = F.hardtanh(x, min_val=-0.5, max_val=0.5)
        return x * self.scale


batch_size = 4
in_channels = 16
out_channels = 16
height = width = 12
kernel_size = 3
stride = 2
padding = 1
output_padding = 1
add_value = 0.5
scale = 2


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, output_padding, add_value, scale]
