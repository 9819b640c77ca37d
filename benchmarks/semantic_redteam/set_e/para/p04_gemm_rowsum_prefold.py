import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum over output units of a bias-free projection, with the overall factor (scale / 2) baked
    into the Gaussian weight at construction; the row-sum is taken on the weight first."""

    def __init__(self, input_size, hidden_size, scaling_factor):
        super().__init__()
        self.w = nn.Parameter(torch.randn(hidden_size, input_size) * (scaling_factor / 2))

    def forward(self, x):
        return torch.mv(x, self.w.sum(dim=0)).unsqueeze(1)


def get_inputs():
    return [torch.rand(16, 40)]


def get_init_inputs():
    return [40, 56, 1.5]
