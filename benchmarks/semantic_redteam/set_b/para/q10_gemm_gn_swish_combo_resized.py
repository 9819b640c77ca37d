import math
import torch
import torch.nn as nn


class Swish(nn.Module):
    def forward(self, x):
        return x / (1.0 + torch.exp(-x))


class GroupStandardize(nn.Module):
    def __init__(self, groups, features, eps=1e-5):
        super().__init__()
        self.groups, self.eps = groups, eps
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))

    def forward(self, x):
        b, f = x.shape
        g = x.view(b, self.groups, f // self.groups)
        mu = g.mean(-1, keepdim=True)
        var = ((g - mu) ** 2).mean(-1, keepdim=True)
        g = (g - mu) / torch.sqrt(var + self.eps)
        return g.view(b, f) * self.weight + self.bias


class Model(nn.Module):
    """Projection -> grouped standardization -> SiLU gate -> learned channel gain -> SiLU gate."""

    def __init__(self, d_in, d_out, groups, gain_shape):
        super().__init__()
        self.W = nn.Parameter(torch.empty(d_in, d_out))
        self.b = nn.Parameter(torch.empty(d_out))
        bound = 1.0 / math.sqrt(d_in)
        nn.init.uniform_(self.W, -bound, bound)
        nn.init.uniform_(self.b, -bound, bound)
        self.norm = GroupStandardize(groups, d_out)
        self.act = Swish()
        self.gain = nn.Parameter(torch.randn(gain_shape))

    def forward(self, x):
        h = torch.addmm(self.b, x, self.W)
        h = self.act(self.norm(h))
        return self.act(h * self.gain)


batch_size = 256
d_in = 2048
d_out = 1024
groups = 32
gain_shape = (d_out,)


def get_inputs():
    return [torch.rand(batch_size, d_in)]


def get_init_inputs():
    return [d_in, d_out, groups, gain_shape]
