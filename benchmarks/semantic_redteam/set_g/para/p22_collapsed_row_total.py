import torch
import torch.nn as nn


class Model(nn.Module):
    """Total of an affine map's outputs per row (the later max / mean / log-sum-exp steps act on one value
    and leave it as it is), computed as x @ colsum(W) + sum(b)."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.lin = nn.Linear(n_in, n_out)

    def forward(self, x):
        return (torch.mv(x, self.lin.weight.sum(0)) + self.lin.bias.sum()).unsqueeze(-1)


def get_inputs():
    return [torch.rand(10, 34)]


def get_init_inputs():
    return [34, 22]
