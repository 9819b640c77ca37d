import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Transposed conv -> batch norm -> tanh -> 2x2 max pool -> per-channel (instance-style)
    normalisation over the spatial grid with a learned per-channel affine."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, groups, num_groups):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride,
                                                 padding=padding)
        self.batch_norm = nn.BatchNorm2d(out_channels)
        self.num_groups = num_groups
        self.norm_weight = nn.Parameter(torch.ones(out_channels))
        self.norm_bias = nn.Parameter(torch.zeros(out_channels))

    def forward(self, x):
        x = torch.tanh(self.batch_norm(self.conv_transpose(x)))
        x = F.max_pool2d(x, kernel_size=2, stride=2)
        mean = x.mean(dim=(2, 3), keepdim=True)
        var = x.var(dim=(2, 3), unbiased=False, keepdim=True)
        x = (x - mean) / torch.sqrt(var + 1e-5)
        return x * self.norm_weight.view(1, -1, 1, 1) + self.norm_bias.view(1, -1, 1, 1)


batch_size = 4
in_channels = 8
out_channels = 16
kernel_size = 5
stride = 1
padding = 1
groups = 4
num_groups = 4
height, width = 10, 10


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, groups, num_groups]
