import torch
import torch.nn as nn


class Model(nn.Module):
    """Channel RMS normalisation, pre-scaled by the global max for overflow safety."""

    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        s = x.abs().max().item() or 1.0
        xs = x / s
        ms = xs.square().mean(dim=1, keepdim=True)
        return xs / torch.sqrt(ms + self.eps / (s * s))


batch_size = 112
features = 64
dim1 = 512
dim2 = 512


def get_inputs():
    return [torch.rand(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [features]
