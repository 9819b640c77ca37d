import torch
import torch.nn as nn


class Model(nn.Module):
    """Row sums of (x W^T) / 2 times a factor, computed as x @ (sum of W's rows); sizes given as a pair."""

    def __init__(self, dims, factor):
        super().__init__()
        n_in, n_hidden = dims
        self.W = nn.Parameter(torch.randn(n_hidden, n_in))
        self.factor = factor

    def forward(self, x):
        col = self.W.sum(dim=0)
        return (x @ col).unsqueeze(1) * (0.5 * self.factor)


def get_inputs():
    return [torch.rand(12, 40)]


def get_init_inputs():
    return [(40, 56), 1.5]
