import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Averaging consecutive blocks of `width` output units is linear, so it is folded into the
    projection: only out_features // width averaged rows are stored. Then the exact erf GELU,
    the per-row maximum and the positive gain (applied after the maximum)."""

    def __init__(self, n_in, n_out, width, gain):
        super().__init__()
        r = 1.0 / math.sqrt(n_in)
        m = n_out // width
        self.w = nn.Parameter(torch.empty(m, n_in).uniform_(-r, r))
        self.b = nn.Parameter(torch.empty(m).uniform_(-r, r))
        self.gain = gain

    def forward(self, x):
        u = F.linear(x, self.w, self.b)
        g = 0.5 * u * (1.0 + torch.erf(u * (1.0 / math.sqrt(2.0))))
        return self.gain * g.amax(dim=1)


def get_inputs():
    return [torch.rand(18, 40)]


def get_init_inputs():
    return [40, 64, 4, 2.0]
