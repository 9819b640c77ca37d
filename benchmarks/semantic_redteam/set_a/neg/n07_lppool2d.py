import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Power-2 (L2) pooling over sliding windows."""

    def __init__(self, kernel_size: int, stride: int, padding: int, dilation: int):
        super().__init__()
        self.k, self.s, self.p = kernel_size, stride, padding

    def forward(self, x):
        x = F.pad(x, (self.p,) * 4)
        return F.lp_pool2d(x, 2.0, self.k, stride=self.s)


batch_size = 32
channels = 64
height = 512
width = 512
kernel_size = 4
stride = 1
padding = 1
dilation = 1


def get_inputs():
    return [torch.rand(batch_size, channels, height, width)]


def get_init_inputs():
    return [kernel_size, stride, padding, dilation]
