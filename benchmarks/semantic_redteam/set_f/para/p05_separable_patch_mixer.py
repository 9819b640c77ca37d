import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Per-channel spatial filtering followed by channel mixing, fused into one contraction over
    unfolded patches: out[b,o,l] = sum_c mix[c,o] * sum_t stencil[c,t] * patch[b,c,t,l]."""

    def __init__(self, channels, features, k, stride=1, padding=0, dilation=1, bias=False):
        super().__init__()
        self.k, self.stride, self.padding, self.dilation = k, stride, padding, dilation
        self.features = features
        s = 1.0 / k
        self.stencil = nn.Parameter(torch.empty(channels, k * k).uniform_(-s, s))
        m = 1.0 / math.sqrt(channels)
        self.mix = nn.Parameter(torch.empty(channels, features).uniform_(-m, m))
        if bias:
            self.stencil_bias = nn.Parameter(torch.zeros(channels))
            self.mix_bias = nn.Parameter(torch.zeros(features))
        else:
            self.stencil_bias = self.mix_bias = None

    def _out_size(self, n):
        return (n + 2 * self.padding - self.dilation * (self.k - 1) - 1) // self.stride + 1

    def forward(self, img):
        b, c, h, w = img.shape
        cols = F.unfold(img, self.k, dilation=self.dilation, padding=self.padding, stride=self.stride)
        cols = cols.view(b, c, self.k * self.k, -1)
        if self.stencil_bias is None:
            out = torch.einsum("bctl,ct,co->bol", cols, self.stencil, self.mix)
        else:
            filtered = torch.einsum("bctl,ct->bcl", cols, self.stencil) + self.stencil_bias[:, None]
            out = torch.einsum("bcl,co->bol", filtered, self.mix) + self.mix_bias[:, None]
        return out.reshape(b, self.features, self._out_size(h), self._out_size(w))


def get_inputs():
    return [torch.rand(2, 10, 21, 19)]


def get_init_inputs():
    return [10, 14, 5, 2, 2, 2]
