import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """2D convolution expressed as im2col followed by a single matrix product."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0,
                 dilation: int = 1, groups: int = 1, bias: bool = False):
        super().__init__()
        assert groups == 1
        self.k = kernel_size
        self.stride, self.padding, self.dilation = stride, padding, dilation
        fan_in = in_channels * kernel_size * kernel_size
        bound = 1.0 / fan_in ** 0.5
        # stored as (C*k*k, O) so that patches @ w_cols gives the output directly
        self.w_cols = nn.Parameter(torch.empty(fan_in, out_channels).uniform_(-bound, bound))
        self.b = nn.Parameter(torch.empty(out_channels).uniform_(-bound, bound)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, _, h, w = x.shape
        k, s, p, d = self.k, self.stride, self.padding, self.dilation
        ho = (h + 2 * p - d * (k - 1) - 1) // s + 1
        wo = (w + 2 * p - d * (k - 1) - 1) // s + 1
        cols = F.unfold(x, kernel_size=k, dilation=d, padding=p, stride=s)  # n, C*k*k, L
        out = torch.matmul(cols.transpose(1, 2), self.w_cols)  # n, L, O
        if self.b is not None:
            out = out + self.b
        return out.transpose(1, 2).reshape(n, -1, ho, wo)


batch_size = 8
height = 512
width = 1024
in_channels = 64
out_channels = 128
kernel_size = 3


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
