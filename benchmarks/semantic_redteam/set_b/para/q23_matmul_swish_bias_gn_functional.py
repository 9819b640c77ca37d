import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Linear -> SiLU -> bias -> GroupNorm, functional with explicit parameters."""

    def __init__(self, in_features, out_features, num_groups, bias_shape):
        super().__init__()
        fc = nn.Linear(in_features, out_features)
        self.fc_w, self.fc_b = fc.weight, fc.bias
        self.extra_bias = nn.Parameter(torch.randn(bias_shape))
        self.gn_w = nn.Parameter(torch.ones(out_features))
        self.gn_b = nn.Parameter(torch.zeros(out_features))
        self.groups = num_groups

    def forward(self, x):
        y = F.silu(F.linear(x, self.fc_w, self.fc_b)) + self.extra_bias
        return F.group_norm(y, self.groups, self.gn_w, self.gn_b)


batch_size = 4096
in_features = 1024
out_features = 4096
num_groups = 64
bias_shape = (out_features,)


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, num_groups, bias_shape]
