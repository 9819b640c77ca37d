import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


class Model(nn.Module):
    """Transposed 2-D convolution rewritten as an ordinary correlation: stride-dilated input, (k-1-p) border, output_padding on the far side, kernel stored pre-flipped in (out, in/groups, kh, kw) layout."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: tuple, stride: int = 1, padding: int = 0, output_padding: int = 0, groups: int = 1, bias: bool = False):
        super().__init__()
        kh, kw = _pair(kernel_size)
        self.stride, self.padding, self.extra = _pair(stride), _pair(padding), _pair(output_padding)
        self.groups = groups
        bound = 1.0 / math.sqrt(out_channels // groups * kh * kw)
        self.kernel = nn.Parameter(torch.empty(out_channels, in_channels // groups, kh, kw).uniform_(-bound, bound))
        self.shift = nn.Parameter(torch.empty(out_channels).uniform_(-bound, bound)) if bias else None

    def forward(self, x):
        (sh, sw), (ph, pw), (eh, ew) = self.stride, self.padding, self.extra
        kh, kw = self.kernel.shape[-2:]
        if sh > 1 or sw > 1:
            n, c, h, w = x.shape
            grid = x.new_zeros(n, c, (h - 1) * sh + 1, (w - 1) * sw + 1)
            grid[:, :, ::sh, ::sw] = x
            x = grid
        x = F.pad(x, (kw - 1 - pw, kw - 1 - pw + ew, kh - 1 - ph, kh - 1 - ph + eh))
        return F.conv2d(x, self.kernel, self.shift, groups=self.groups)


N_IMAGES = 8
C_IN = 64
C_OUT = 64
KERNEL_HW = (3, 7)
SIDE = 512


def get_inputs():
    return [torch.rand(N_IMAGES, C_IN, SIDE, SIDE)]


def get_init_inputs():
    return [C_IN, C_OUT, KERNEL_HW]
