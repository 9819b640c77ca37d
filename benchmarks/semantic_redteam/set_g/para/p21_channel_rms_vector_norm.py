import torch
import torch.nn as nn


class Model(nn.Module):
    """Each position's channel vector divided by its root mean square (eps inside the root), via the
    2-norm over channels."""

    def __init__(self, n_channels, eps=1e-5):
        super().__init__()
        self.c, self.eps = n_channels, eps

    def forward(self, x):
        ss = torch.linalg.vector_norm(x, ord=2, dim=1, keepdim=True) ** 2
        return x * torch.rsqrt(ss / self.c + self.eps)


def get_inputs():
    return [torch.rand(3, 10, 12, 14)]


def get_init_inputs():
    return [10]
