import torch
import torch.nn as nn
import torch.nn.functional as F


def _batch_standardise(t, g, b, eps=1e-5):
    mu = t.mean(dim=(0, 2, 3), keepdim=True)
    var = ((t - mu) ** 2).mean(dim=(0, 2, 3), keepdim=True)
    return (t - mu) / torch.sqrt(var + eps) * g[None, :, None, None] + b[None, :, None, None]


class Model(nn.Module):
    """Two 3x3 filter stages with batch-statistics standardisation and a projected skip path.
    The 1x1 skip projection is embedded as the centre tap of a 3x3 kernel and evaluated in the same call as stage one."""

    def __init__(self, in_channels, out_channels, stride=1):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(out_channels, in_channels, 3, 3) * (2.0 / (9 * in_channels)) ** 0.5)
        self.w2 = nn.Parameter(torch.randn(out_channels, out_channels, 3, 3) * (2.0 / (9 * out_channels)) ** 0.5)
        self.wskip = nn.Parameter(torch.randn(out_channels, in_channels) * (2.0 / in_channels) ** 0.5)
        self.g1 = nn.Parameter(torch.ones(out_channels)); self.b1 = nn.Parameter(torch.zeros(out_channels))
        self.g2 = nn.Parameter(torch.ones(out_channels)); self.b2 = nn.Parameter(torch.zeros(out_channels))
        self.gs = nn.Parameter(torch.ones(out_channels)); self.bs = nn.Parameter(torch.zeros(out_channels))
        self.stride = stride
        self.c = out_channels

    def forward(self, x):
        skip_as_3x3 = F.pad(self.wskip[:, :, None, None], (1, 1, 1, 1))
        both = F.conv2d(x, torch.cat([self.w1, skip_as_3x3], dim=0), stride=self.stride, padding=1)
        main, skip = both[:, :self.c], both[:, self.c:]
        main = torch.relu(_batch_standardise(main, self.g1, self.b1))
        main = _batch_standardise(F.conv2d(main, self.w2, padding=1), self.g2, self.b2)
        skip = _batch_standardise(skip, self.gs, self.bs)
        return torch.relu(main + skip)


def get_inputs():
    return [torch.rand(2, 3, 14, 14)]


def get_init_inputs():
    return [3, 64, 1]
