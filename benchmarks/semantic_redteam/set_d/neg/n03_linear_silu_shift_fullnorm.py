import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear, x*sigmoid(x), learned offset, then standardisation over ALL features (num_groups is ignored)."""

    def __init__(self, in_features, out_features, num_groups, bias_shape):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.bias = nn.Parameter(torch.randn(bias_shape))
        self.norm = nn.LayerNorm(out_features)

    def forward(self, x):
        x = self.matmul(x)
        x = torch.sigmoid(x) * x
        x = x + self.bias
        return self.norm(x)


def get_inputs():
    return [torch.rand(8, 32)]


def get_init_inputs():
    return [32, 48, 4, (48,)]
