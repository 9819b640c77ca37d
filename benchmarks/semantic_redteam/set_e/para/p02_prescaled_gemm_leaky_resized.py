import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Affine map stored as an (in, out) matrix whose entries already include the gain `multiplier`,
    then a leaky rectifier."""

    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        r = multiplier / math.sqrt(in_features)
        self.w_io = nn.Parameter(torch.empty(in_features, out_features).uniform_(-r, r))
        self.shift = nn.Parameter(torch.empty(out_features).uniform_(-r, r))
        self.slope = negative_slope

    def forward(self, x):
        return F.leaky_relu(torch.addmm(self.shift, x, self.w_io), self.slope)


def get_inputs():
    return [torch.rand(10, 48)]


def get_init_inputs():
    return [48, 40, 2.0, 0.1]
