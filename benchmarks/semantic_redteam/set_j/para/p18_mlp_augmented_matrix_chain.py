import math

import torch
import torch.nn as nn


class Model(nn.Module):
    """Deep MLP as a chain of augmented (in+1, out) matrices [W^T; b] applied to [h, 1] via cat + mm, ReLU as clamp_min between layers, parameters in a ParameterList."""

    def __init__(self, input_size, hidden_layer_sizes, output_size):
        super().__init__()
        dims = [input_size, *hidden_layer_sizes, output_size]
        self.mats = nn.ParameterList()
        for a, b in zip(dims[:-1], dims[1:]):
            bound = 1.0 / math.sqrt(a)
            self.mats.append(nn.Parameter(torch.empty(a + 1, b).uniform_(-bound, bound)))

    def forward(self, x):
        ones = x.new_ones(x.shape[0], 1)
        last = len(self.mats) - 1
        for i, m in enumerate(self.mats):
            x = torch.cat([x, ones], dim=1).mm(m)
            if i < last:
                x = x.clamp_min(0.0)
        return x


ROWS = 1024
FEATURES_IN = 8192
DEPTH_WIDTHS = [1024] * 16
FEATURES_OUT = 8192


def get_inputs():
    return [torch.rand(ROWS, FEATURES_IN)]


def get_init_inputs():
    return [FEATURES_IN, DEPTH_WIDTHS, FEATURES_OUT]
