import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """y = (1 + s) * (x W^T + b), with W and b kept as one (in+1, out) block applied to [x, 1]."""

    def __init__(self, n_in, n_out, s):
        super().__init__()
        r = 1.0 / math.sqrt(n_in)
        self.block = nn.Parameter(torch.empty(n_in + 1, n_out).uniform_(-r, r))
        self.s = s

    def forward(self, x):
        ones = torch.ones_like(x[:, :1])
        return torch.einsum("bi,io->bo", torch.cat((x, ones), 1), self.block) * (1.0 + self.s)


def get_inputs():
    return [torch.rand(24, 36)]


def get_init_inputs():
    return [36, 28, 0.5]
