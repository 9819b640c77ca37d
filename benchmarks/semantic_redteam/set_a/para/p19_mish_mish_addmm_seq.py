import torch
import torch.nn as nn
import torch.nn.functional as F


class SoftplusTanhGate(nn.Module):
    def forward(self, z):
        return z * torch.tanh(F.softplus(z))


class Affine(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(o, i).uniform_(-i ** -0.5, i ** -0.5))
        self.bias = nn.Parameter(torch.zeros(o))

    def forward(self, z):
        return torch.addmm(self.bias, z, self.weight.t())


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.net = nn.Sequential(Affine(in_features, out_features), SoftplusTanhGate(), SoftplusTanhGate())

    def forward(self, x):
        return self.net(x)


batch_size = 256
in_features = 8192
out_features = 8192


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
