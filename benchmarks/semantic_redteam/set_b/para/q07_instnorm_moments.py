import torch
import torch.nn as nn


class Model(nn.Module):
    """Per-sample, per-channel standardization using first and second raw moments."""

    def __init__(self, num_features, eps=1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        flat = x.flatten(2)
        m1 = flat.mean(-1, keepdim=True)
        m2 = (flat * flat).mean(-1, keepdim=True)
        var = m2 - m1 * m1
        return ((flat - m1) * torch.rsqrt(var + self.eps)).view_as(x)


batch_size = 32
features = 64
dim1 = 128
dim2 = 128


def get_inputs():
    return [torch.rand(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [features]
