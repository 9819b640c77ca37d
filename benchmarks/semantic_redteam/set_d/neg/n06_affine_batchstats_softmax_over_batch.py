import torch
import torch.nn as nn


class Model(nn.Module):
    """Gemm, batch norm, scale, then softmax across the BATCH axis (dim 0) instead of features."""

    def __init__(self, in_features, out_features, bn_eps=1e-5, bn_momentum=0.1, scale_shape=(1,)):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features, eps=bn_eps, momentum=bn_momentum)
        self.scale = nn.Parameter(torch.ones(scale_shape))

    def forward(self, x):
        x = self.scale * self.bn(self.gemm(x))
        return torch.softmax(x, dim=0)


def get_inputs():
    return [torch.rand(10, 24)]


def get_init_inputs():
    return [24, 16, 1e-5, 0.1, (1,)]
