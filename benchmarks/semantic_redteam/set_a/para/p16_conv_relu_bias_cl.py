import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, c_in, c_out, k, offset_shape):
        super().__init__()
        self.blocks = nn.ModuleDict({"feat": nn.Conv2d(c_in, c_out, k)})
        self.offset = nn.Parameter(torch.randn(offset_shape))

    def forward(self, x):
        x = x.contiguous(memory_format=torch.channels_last)
        y = self.blocks["feat"](x)
        y = torch.where(y > 0, y, torch.zeros_like(y)) + self.offset
        return y.contiguous()


batch_size = 128
in_channels = 64
out_channels = 128
height = width = 128
kernel_size = 3
bias_shape = (out_channels, 1, 1)


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, bias_shape]
