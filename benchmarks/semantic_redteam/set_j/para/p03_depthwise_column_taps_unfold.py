import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Depthwise (k x 1) convolution as zero padding, strided/dilated window unfold along H and a per-channel tap contraction (einsum); taps stored as a (C, k) matrix."""

    def __init__(self, in_channels: int, kernel_size: int, stride: int = 1, padding: int = 0, dilation: int = 1, bias: bool = False):
        super().__init__()
        self.k, self.step, self.pad, self.gap = kernel_size, stride, padding, dilation
        bound = 1.0 / math.sqrt(kernel_size)
        self.taps = nn.Parameter(torch.empty(in_channels, kernel_size).uniform_(-bound, bound))
        self.offset = nn.Parameter(torch.empty(in_channels).uniform_(-bound, bound)) if bias else None

    def forward(self, x):
        p, s = self.pad, self.step
        x = F.pad(x, (p, p, p, p))[..., ::s]  # kernel width is 1: the width axis is only padded and strided
        span = self.gap * (self.k - 1) + 1
        windows = x.unfold(2, span, s)[..., :: self.gap]  # (B, C, H_out, W_out, k)
        y = torch.einsum("bchwk,ck->bchw", windows, self.taps)
        if self.offset is not None:
            y = y + self.offset[:, None, None]
        return y


def get_inputs():
    return [torch.rand(2, 6, 21, 17)]


def get_init_inputs():
    return [6, 3, 2, 1, 2]
