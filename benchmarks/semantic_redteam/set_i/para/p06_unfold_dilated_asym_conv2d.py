import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """2-D convolution with a rectangular, dilated kernel and zero padding, implemented as
    im2col (F.unfold) followed by a single matrix multiply per batch."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=(0, 0), dilation=(1, 1), bias=False):
        super().__init__()
        self.kernel_size = tuple(kernel_size)
        self.stride = stride
        self.padding = tuple(padding)
        self.dilation = tuple(dilation)
        kh, kw = self.kernel_size
        bound = 1.0 / math.sqrt(in_channels * kh * kw)
        self.weight = nn.Parameter(torch.empty(out_channels, in_channels, kh, kw).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(out_channels).uniform_(-bound, bound)) if bias else None

    def forward(self, x):
        B, C, H, W = x.shape
        kh, kw = self.kernel_size
        ph, pw = self.padding
        dh, dw = self.dilation
        H_out = (H + 2 * ph - dh * (kh - 1) - 1) // self.stride + 1
        W_out = (W + 2 * pw - dw * (kw - 1) - 1) // self.stride + 1
        cols = F.unfold(x, (kh, kw), dilation=(dh, dw), padding=(ph, pw), stride=self.stride)  # (B, C*kh*kw, L)
        out = self.weight.view(self.weight.shape[0], -1) @ cols  # (B, O, L)
        if self.bias is not None:
            out = out + self.bias.view(1, -1, 1)
        return out.view(B, -1, H_out, W_out)


batch_size = 2
in_channels = 8
out_channels = 16
kernel_size = (5, 9)
height = 40
width = 40
stride = 1
padding = (2, 4)
dilation = (2, 3)


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, dilation]
