import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def _mish(t):
    return t * torch.tanh(F.softplus(t))


def _group_standardize(t, groups, gamma, beta, eps=1e-5):
    b, c = t.shape
    g = t.view(b, groups, c // groups)
    mu = g.mean(dim=-1, keepdim=True)
    var = g.var(dim=-1, unbiased=False, keepdim=True)
    g = (g - mu) * torch.rsqrt(var + eps)
    return g.view(b, c) * gamma + beta


class Model(nn.Module):
    """Dense layer with an extra learned bias (both offsets added inside one addmm), clipped to
    [-1, 1], Mish self-gating, then group normalisation over `num_groups` feature groups."""

    def __init__(self, in_features, out_features, bias_shape, num_groups):
        super().__init__()
        bound = 1.0 / math.sqrt(in_features)
        self.weight = nn.Parameter(torch.empty(out_features, in_features).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound))
        self.extra_bias = nn.Parameter(torch.randn(bias_shape))
        self.gamma = nn.Parameter(torch.ones(out_features))
        self.beta = nn.Parameter(torch.zeros(out_features))
        self.num_groups = num_groups

    def forward(self, x):
        h = torch.addmm(self.bias + self.extra_bias, x, self.weight.t())
        h = h.clamp(-1.0, 1.0)
        h = _mish(h)
        return _group_standardize(h, self.num_groups, self.gamma, self.beta)


batch_size = 64
in_features = 512
out_features = 256
bias_shape = (out_features,)
num_groups = 16


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, bias_shape, num_groups]
