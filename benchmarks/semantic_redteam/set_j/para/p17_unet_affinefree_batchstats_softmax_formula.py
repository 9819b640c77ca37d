import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _batch_standardize(t, eps=1e-5):
    # training-mode batch norm; the affine gain/shift are left out (ones / zeros at init)
    mu = t.mean(dim=(0, 2, 3), keepdim=True)
    var = (t - mu).pow(2).mean(dim=(0, 2, 3), keepdim=True)
    return (t - mu) / torch.sqrt(var + eps)


def _row_softmax(t):
    e = torch.exp(t - t.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def _halve(t):
    n, c, h, w = t.shape
    return t[:, :, : h // 2 * 2, : w // 2 * 2].reshape(n, c, h // 2, 2, w // 2, 2).amax(dim=(3, 5))


def _kernel(co, ci, k):
    bound = 1.0 / math.sqrt(ci * k * k)
    return nn.Parameter(torch.empty(co, ci, k, k).uniform_(-bound, bound))


class Stage(nn.Module):
    """(3x3 conv, no bias: the batch statistics remove it) -> standardize -> softmax over W, twice."""

    def __init__(self, ci, co):
        super().__init__()
        self.k1, self.k2 = _kernel(co, ci, 3), _kernel(co, co, 3)

    def forward(self, t):
        t = _row_softmax(_batch_standardize(F.conv2d(t, self.k1, padding=1)))
        return _row_softmax(_batch_standardize(F.conv2d(t, self.k2, padding=1)))


class Up2(nn.Module):
    """2x2 / stride-2 transposed conv as an einsum followed by pixel interleaving."""

    def __init__(self, ci, co):
        super().__init__()
        bound = 1.0 / math.sqrt(co * 4)
        self.w = nn.Parameter(torch.empty(ci, co, 2, 2).uniform_(-bound, bound))
        self.b = nn.Parameter(torch.empty(co).uniform_(-bound, bound))

    def forward(self, t):
        n, _, h, w = t.shape
        y = torch.einsum("nihw,iokl->nohkwl", t, self.w).reshape(n, -1, 2 * h, 2 * w)
        return y + self.b.view(1, -1, 1, 1)


class Model(nn.Module):
    """U-Net with BatchNorm written as affine-free batch standardization, conv biases before it dropped, softmax as exp/sum, max-pool as reshape+amax, up-convs as einsum, 1x1 head as einsum."""

    def __init__(self, in_channels, out_channels, features):
        super().__init__()
        f = features
        widths = [f, 2 * f, 4 * f, 8 * f]
        self.down = nn.ModuleList(Stage(a, b) for a, b in zip([in_channels] + widths[:-1], widths))
        self.mid = Stage(8 * f, 16 * f)
        self.ups = nn.ModuleList(Up2(2 * c, c) for c in reversed(widths))
        self.fuse = nn.ModuleList(Stage(2 * c, c) for c in reversed(widths))
        bound = 1.0 / math.sqrt(f)
        self.head_w = nn.Parameter(torch.empty(out_channels, f).uniform_(-bound, bound))
        self.head_b = nn.Parameter(torch.empty(out_channels).uniform_(-bound, bound))

    def forward(self, x):
        skips = []
        for stage in self.down:
            x = stage(x)
            skips.append(x)
            x = _halve(x)
        x = self.mid(x)
        for up, fuse, skip in zip(self.ups, self.fuse, reversed(skips)):
            x = fuse(torch.cat([up(x), skip], dim=1))
        return torch.einsum("nchw,oc->nohw", x, self.head_w) + self.head_b.view(1, -1, 1, 1)


def get_inputs():
    return [torch.rand(2, 4, 32, 32)]


def get_init_inputs():
    return [4, 3, 4]
