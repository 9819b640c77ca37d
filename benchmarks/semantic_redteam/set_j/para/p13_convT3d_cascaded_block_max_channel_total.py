import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class BlockMax3d(nn.Module):
    """Non-overlapping cubic max over k^3 blocks (trailing remainder dropped)."""

    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, t):
        k = self.k
        n, c, d, h, w = t.shape
        d2, h2, w2 = d // k, h // k, w // k
        t = t[:, :, : d2 * k, : h2 * k, : w2 * k].reshape(n, c, d2, k, h2, k, w2, k)
        return t.amax(dim=(3, 5, 7))


class Model(nn.Module):
    """Functional 3-D transposed conv, the two max-pools as reshape block maxima in an nn.Sequential, channel sum as an einsum contraction."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.stride, self.padding = stride, padding
        bound = 1.0 / math.sqrt(out_channels * kernel_size ** 3)
        self.weight = nn.Parameter(torch.empty(in_channels, out_channels, kernel_size, kernel_size, kernel_size).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(out_channels).uniform_(-bound, bound))
        self.pools = nn.Sequential(BlockMax3d(2), BlockMax3d(3))

    def forward(self, x):
        y = F.conv_transpose3d(x, self.weight, self.bias, stride=self.stride, padding=self.padding)
        y = self.pools(y)
        return torch.einsum("ncdhw->ndhw", y).unsqueeze(1)


def get_inputs():
    return [torch.rand(2, 4, 8, 8, 8)]


def get_init_inputs():
    return [4, 6, 3, 2, 1]
