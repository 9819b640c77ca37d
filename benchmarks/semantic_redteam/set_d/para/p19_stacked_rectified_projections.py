import math
import torch
import torch.nn as nn


class _Dense(nn.Module):
    def __init__(self, n_in, n_out, rectify):
        super().__init__()
        bound = 1.0 / math.sqrt(n_in)
        self.wt = nn.Parameter(torch.empty(n_in, n_out).uniform_(-bound, bound))
        self.b = nn.Parameter(torch.empty(n_out).uniform_(-bound, bound))
        self.rectify = rectify

    def forward(self, h):
        h = torch.addmm(self.b, h, self.wt)
        return h.clamp(min=0) if self.rectify else h


class Model(nn.Module):
    """Chain of affine maps; every map except the last is followed by a clip at zero."""

    def __init__(self, input_size, hidden_layer_sizes, output_size):
        super().__init__()
        widths = [input_size] + list(hidden_layer_sizes)
        stages = [_Dense(a, b, True) for a, b in zip(widths[:-1], widths[1:])]
        stages.append(_Dense(widths[-1], output_size, False))
        self.stages = nn.ModuleList(stages)

    def forward(self, x):
        for st in self.stages:
            x = st(x)
        return x


def get_inputs():
    return [torch.rand(5, 20)]


def get_init_inputs():
    return [20, [16, 12, 8], 6]
