import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer, sigmoid-approximated GELU (x * sigmoid(1.702 x)), constant scaling."""

    def __init__(self, in_features, out_features, scaling_factor):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor

    def forward(self, x):
        z = self.matmul(x)
        return z * torch.sigmoid(1.702 * z) * self.scaling_factor


batch_size = 64
in_features = 1024
out_features = 1024
scaling_factor = 2.0


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scaling_factor]
