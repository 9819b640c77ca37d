import torch
import torch.nn as nn


class Model(nn.Module):
    """Running MEAN along one axis (prefix totals divided by the count so far), via a triangular matrix."""

    def __init__(self, axis):
        super().__init__()
        self.axis = axis

    def forward(self, x):
        xt = x.movedim(self.axis, -1)
        n = xt.shape[-1]
        tri = torch.tril(torch.ones(n, n, dtype=x.dtype))
        tri = tri / tri.sum(dim=1, keepdim=True)
        return (xt @ tri.t()).movedim(-1, self.axis)


def get_inputs():
    return [torch.rand(16, 40)]


def get_init_inputs():
    return [1]
