import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """Bias-free projection (a constant offset would be removed by the batch centring anyway),
    standardised with batch statistics; the per-unit gain/shift already include the extra scalar
    offset and the division by `divisor`. Ends with the logistic self-gate z / (1 + e^-z)."""

    def __init__(self, n_in, n_out, eps=1e-5, momentum=0.1, bias_shape=(1,), divisor=1.0):
        super().__init__()
        r = 1.0 / math.sqrt(n_in)
        self.weight = nn.Parameter(torch.empty(n_out, n_in).uniform_(-r, r))
        self.scale = nn.Parameter(torch.full((n_out,), 1.0 / divisor))
        self.offset = nn.Parameter(torch.randn(bias_shape).expand(n_out) / divisor)
        self.eps = eps

    def forward(self, x):
        h = torch.einsum("bi,oi->bo", x, self.weight)
        c = h - h.mean(dim=0)
        inv = torch.rsqrt(c.square().mean(dim=0) + self.eps)
        z = c * (inv * self.scale) + self.offset
        return z / (1.0 + torch.exp(-z))


def get_inputs():
    return [torch.rand(24, 30)]


def get_init_inputs():
    return [30, 26, 1e-5, 0.1, (1,), 1.7]
