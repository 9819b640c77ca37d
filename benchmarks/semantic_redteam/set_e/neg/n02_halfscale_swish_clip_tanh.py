import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """Affine map drawn at half scale, swish, clip to [-1, 1], tanh, clip.

    The half scale acts BEFORE swish: swish(z/2) = z/2*sigmoid(z/2), whereas halving after swish
    gives z/2*sigmoid(z). No affine reparametrisation u = a*z + c makes swish(u) = swish(z)/2
    (first order forces a = 1/2, c = 0; second order then differs by z^2/16), and clip/tanh are
    injective on the range involved, so the outputs differ for every tie of the weights.
    """

    def __init__(self, in_features, out_features):
        super().__init__()
        k = 0.5 / math.sqrt(in_features)
        self.w = nn.Parameter(torch.empty(in_features, out_features).uniform_(-k, k))
        self.b = nn.Parameter(torch.empty(out_features).uniform_(-k, k))

    def forward(self, x):
        z = x @ self.w + self.b
        z = z * torch.sigmoid(z)
        z = torch.clamp(z, -1.0, 1.0)
        return torch.clamp(torch.tanh(z), -1.0, 1.0)


def get_inputs():
    return [torch.rand(8, 32) * 2.0]


def get_init_inputs():
    return [32, 24]
