import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Sliding-window linear map: extract patches, then multiply by a (patch_len x out) matrix."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: tuple, stride: tuple = (1, 1),
                 padding: tuple = (0, 0), dilation: tuple = (1, 1), groups: int = 1, bias: bool = False):
        super().__init__()
        assert groups == 1
        self.ks = tuple(kernel_size)
        self.stride, self.padding, self.dilation = stride, padding, dilation
        self.out_channels = out_channels
        fan_in = in_channels * self.ks[0] * self.ks[1]
        bound = 1.0 / math.sqrt(fan_in)
        self.w_cols = nn.Parameter(torch.empty(fan_in, out_channels).uniform_(-bound, bound))
        self.b = nn.Parameter(torch.empty(out_channels).uniform_(-bound, bound)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, _, h, w = x.shape
        kh, kw = self.ks
        ho = (h + 2 * self.padding[0] - self.dilation[0] * (kh - 1) - 1) // self.stride[0] + 1
        wo = (w + 2 * self.padding[1] - self.dilation[1] * (kw - 1) - 1) // self.stride[1] + 1
        cols = F.unfold(x, (kh, kw), dilation=self.dilation, padding=self.padding, stride=self.stride)
        y = torch.einsum("nkl,ko->nol", cols, self.w_cols)
        if self.b is not None:
            y = y + self.b[None, :, None]
        return y.reshape(n, self.out_channels, ho, wo)


def get_inputs():
    return [torch.rand(2, 5, 13, 9)]


def get_init_inputs():
    return [5, 7, (3, 2)]
