import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """Affine map (weights pre-multiplied by |scale|), max over non-overlapping feature windows, total, sign fix-up."""

    def __init__(self, in_features, out_features, kernel_size, scale_factor):
        super().__init__()
        bound = 1.0 / math.sqrt(in_features)
        mag = abs(scale_factor)
        self.sign = 1.0 if scale_factor >= 0 else -1.0
        self.wt = nn.Parameter(torch.empty(in_features, out_features).uniform_(-bound, bound) * mag)
        self.b = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound) * mag)
        self.win = kernel_size

    def forward(self, x):
        z = torch.addmm(self.b, x, self.wt)
        nwin = z.shape[1] // self.win
        peaks = z[:, :nwin * self.win].reshape(z.shape[0], nwin, self.win).amax(dim=-1)
        return self.sign * peaks.sum(dim=-1)


def get_inputs():
    return [torch.rand(7, 30)]


def get_init_inputs():
    return [30, 25, 3, 0.25]
