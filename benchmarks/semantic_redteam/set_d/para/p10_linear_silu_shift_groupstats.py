import math
import torch
import torch.nn as nn


def _standardise_blocks(h, blocks, gamma, beta, eps=1e-5):
    b, f = h.shape
    v = h.view(b, blocks, f // blocks)
    var, mu = torch.var_mean(v, dim=2, unbiased=False, keepdim=True)
    v = (v - mu) / torch.sqrt(var + eps)
    return v.view(b, f) * gamma + beta


class Model(nn.Module):
    """Projection, self-gated logistic activation, learned offset, then per-block feature standardisation."""

    def __init__(self, in_features, out_features, num_groups, bias_shape):
        super().__init__()
        bound = 1.0 / math.sqrt(in_features)
        self.proj = nn.Parameter(torch.empty(in_features, out_features).uniform_(-bound, bound))
        self.proj_b = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound))
        self.offset = nn.Parameter(torch.randn(bias_shape))
        self.gamma = nn.Parameter(torch.ones(out_features))
        self.beta = nn.Parameter(torch.zeros(out_features))
        self.blocks = num_groups

    def forward(self, x):
        h = torch.einsum("bi,io->bo", x, self.proj) + self.proj_b
        h = h / (1.0 + torch.exp(-h))
        h = h + self.offset
        return _standardise_blocks(h, self.blocks, self.gamma, self.beta)


def get_inputs():
    return [torch.rand(10, 48)]


def get_init_inputs():
    return [48, 96, 12, (96,)]
