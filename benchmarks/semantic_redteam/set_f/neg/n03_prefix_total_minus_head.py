import torch
import torch.nn as nn


class Model(nn.Module):
    """Running total along `axis` with the leading entry taken back out, so the first position
    of the output is zero."""

    def __init__(self, axis):
        super().__init__()
        self.axis = axis

    def forward(self, x):
        return torch.cumsum(x, dim=self.axis) - x.narrow(self.axis, 0, 1)


def get_inputs():
    return [torch.rand(8, 40)]


def get_init_inputs():
    return [1]
