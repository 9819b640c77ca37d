import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """1D upsampling filter: zero-stuff the signal, pad by (k-1-p), then correlate with a stored (out, in, k) kernel."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0,
                 output_padding: int = 0, groups: int = 1, bias: bool = False):
        super().__init__()
        assert groups == 1
        self.k, self.s, self.p, self.op = kernel_size, stride, padding, output_padding
        bound = 1.0 / math.sqrt(out_channels * kernel_size)
        self.w_fwd = nn.Parameter(torch.empty(out_channels, in_channels, kernel_size).uniform_(-bound, bound))
        self.b = nn.Parameter(torch.empty(out_channels).uniform_(-bound, bound)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, length = x.shape
        if self.s > 1:
            up = x.new_zeros(n, c, (length - 1) * self.s + 1)
            up[:, :, ::self.s] = x
            x = up
        edge = self.k - 1 - self.p
        x = F.pad(x, (edge, edge + self.op))
        return F.conv1d(x, self.w_fwd, self.b)


def get_inputs():
    return [torch.rand(3, 6, 20)]


def get_init_inputs():
    return [6, 10, 4]
