import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def _batch_standardize(t, gain, shift, eps=1e-5):
    mu = t.mean(dim=(0, 2, 3), keepdim=True)
    var = (t - mu).square().mean(dim=(0, 2, 3), keepdim=True)
    return (t - mu) * torch.rsqrt(var + eps) * gain.view(1, -1, 1, 1) + shift.view(1, -1, 1, 1)


def _pointwise(t, w_io):
    return torch.einsum("bchw,co->bohw", t, w_io)


def _stencil(t, taps, stride):
    """Per-channel k x k filter with 'same' padding, written as a sum of shifted slices."""
    k = taps.shape[-1]
    p = (k - 1) // 2
    padded = F.pad(t, (p, p, p, p))
    h_out = (t.shape[2] + 2 * p - k) // stride + 1
    w_out = (t.shape[3] + 2 * p - k) // stride + 1
    acc = 0
    for i in range(k):
        for j in range(k):
            window = padded[:, :, i : i + stride * (h_out - 1) + 1 : stride, j : j + stride * (w_out - 1) + 1 : stride]
            acc = acc + window * taps[:, i, j].view(1, -1, 1, 1)
    return acc


class Model(nn.Module):
    """Inverted-residual block (widen with 1x1, per-channel k x k, narrow with 1x1) with batch-
    statistics standardisation written out, clipped rectifiers as clamp(0, 6), 1x1 maps stored
    as (in, out) matrices, and an identity shortcut when shapes allow."""

    def __init__(self, c_in, c_out, k, stride, ratio):
        super().__init__()
        wide = c_in * ratio
        self.stride = stride
        self.shortcut = stride == 1 and c_in == c_out
        self.widen = None
        if ratio != 1:
            self.widen = nn.Parameter(torch.randn(c_in, wide) / math.sqrt(c_in))
            self.g1, self.s1 = nn.Parameter(torch.ones(wide)), nn.Parameter(torch.zeros(wide))
        self.taps = nn.Parameter(torch.randn(wide, k, k) / k)
        self.g2, self.s2 = nn.Parameter(torch.ones(wide)), nn.Parameter(torch.zeros(wide))
        self.narrow = nn.Parameter(torch.randn(wide, c_out) / math.sqrt(wide))
        self.g3, self.s3 = nn.Parameter(torch.ones(c_out)), nn.Parameter(torch.zeros(c_out))

    def forward(self, x):
        h = x
        if self.widen is not None:
            h = _batch_standardize(_pointwise(h, self.widen), self.g1, self.s1).clamp(0.0, 6.0)
        h = _batch_standardize(_stencil(h, self.taps, self.stride), self.g2, self.s2).clamp(0.0, 6.0)
        h = _batch_standardize(_pointwise(h, self.narrow), self.g3, self.s3)
        return h + x if self.shortcut else h


def get_inputs():
    return [torch.rand(2, 16, 10, 10)]


def get_init_inputs():
    return [16, 16, 3, 1, 4]
