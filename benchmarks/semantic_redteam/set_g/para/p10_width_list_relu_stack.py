import torch
import torch.nn as nn


class Model(nn.Module):
    """Stack of affine maps over the widths [in, h1, ..., out] (one list), ReLU between them."""

    def __init__(self, widths):
        super().__init__()
        self.ws = nn.ParameterList()
        self.bs = nn.ParameterList()
        for a, b in zip(widths[:-1], widths[1:]):
            lin = nn.Linear(a, b)
            self.ws.append(nn.Parameter(lin.weight.detach().t().contiguous()))
            self.bs.append(nn.Parameter(lin.bias.detach().clone()))

    def forward(self, x):
        n = len(self.ws)
        for i in range(n):
            x = torch.addmm(self.bs[i], x, self.ws[i])
            if i < n - 1:
                x = torch.relu(x)
        return x


def get_inputs():
    return [torch.rand(8, 30)]


def get_init_inputs():
    return [[30, 44, 26, 12]]
