import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """Affine map whose weights already carry the 1/divisor factor, followed by clipping at zero."""

    def __init__(self, in_features, out_features, divisor):
        super().__init__()
        bound = 1.0 / math.sqrt(in_features)
        self.wt = nn.Parameter(torch.empty(in_features, out_features).uniform_(-bound, bound) / divisor)
        self.b = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound) / divisor)

    def forward(self, x):
        return torch.addmm(self.b, x, self.wt).clamp_min(0.0)


def get_inputs():
    return [torch.rand(16, 40)]


def get_init_inputs():
    return [40, 24, 3.0]
