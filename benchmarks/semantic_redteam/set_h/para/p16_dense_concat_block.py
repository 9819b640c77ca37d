import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class DenseUnit(nn.Module):
    """Pre-activation unit: batch-statistics normalisation, ReLU, 3x3 convolution (no bias)."""

    def __init__(self, in_ch, growth, eps=1e-5):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(in_ch))
        self.beta = nn.Parameter(torch.zeros(in_ch))
        bound = 1.0 / math.sqrt(in_ch * 9)
        self.kernel = nn.Parameter(torch.empty(growth, in_ch, 3, 3).uniform_(-bound, bound))
        self.eps = eps

    def forward(self, x):
        mu = x.mean(dim=(0, 2, 3), keepdim=True)
        var = x.var(dim=(0, 2, 3), unbiased=False, keepdim=True)
        h = (x - mu) / torch.sqrt(var + self.eps)
        h = h * self.gamma[None, :, None, None] + self.beta[None, :, None, None]
        return F.conv2d(F.relu(h), self.kernel, padding=1)


class Model(nn.Module):
    """Densely connected block: every unit sees the concatenation of the block input and all
    previous units' outputs, and the block returns the full concatenation."""

    def __init__(self, num_layers: int, num_input_features: int, growth_rate: int):
        super().__init__()
        self.units = nn.ModuleList(
            [DenseUnit(num_input_features + i * growth_rate, growth_rate) for i in range(num_layers)]
        )

    def forward(self, x):
        feats = [x]
        for unit in self.units:
            feats.append(unit(torch.cat(feats, dim=1)))
        return torch.cat(feats, dim=1)


batch_size = 10
num_layers = 6
num_input_features = 32
growth_rate = 32
height, width = 224, 224


def get_inputs():
    return [torch.rand(batch_size, num_input_features, height, width)]


def get_init_inputs():
    return [num_layers, num_input_features, growth_rate]
