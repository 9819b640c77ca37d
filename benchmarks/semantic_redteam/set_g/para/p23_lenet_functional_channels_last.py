import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def _u(shape, fan):
    r = 1.0 / math.sqrt(fan)
    return nn.Parameter(torch.empty(*shape).uniform_(-r, r))


class Model(nn.Module):
    """Two convolution+rectify+2x2-max stages (filters stored (out, kh, kw, in)) and three dense layers
    whose matrices are stored (in, out), all as functional calls."""

    def __init__(self, n_classes):
        super().__init__()
        self.k1, self.c1 = _u((6, 5, 5, 1), 25), _u((6,), 25)
        self.k2, self.c2 = _u((16, 5, 5, 6), 150), _u((16,), 150)
        self.m1, self.d1 = _u((400, 120), 400), _u((120,), 400)
        self.m2, self.d2 = _u((120, 84), 120), _u((84,), 120)
        self.m3, self.d3 = _u((84, n_classes), 84), _u((n_classes,), 84)

    def forward(self, x):
        x = F.max_pool2d(F.relu(F.conv2d(x, self.k1.permute(0, 3, 1, 2), self.c1)), 2)
        x = F.max_pool2d(F.relu(F.conv2d(x, self.k2.permute(0, 3, 1, 2), self.c2)), 2)
        x = x.flatten(1)
        x = F.relu(torch.addmm(self.d1, x, self.m1))
        x = F.relu(torch.addmm(self.d2, x, self.m2))
        return torch.addmm(self.d3, x, self.m3)


def get_inputs():
    return [torch.rand(6, 1, 32, 32)]


def get_init_inputs():
    return [7]
