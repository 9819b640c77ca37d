import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear -> exact GELU (erf) -> divide by a constant."""

    def __init__(self, in_features, out_features, divisor):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.divisor = divisor

    def forward(self, x):
        y = self.linear(x)
        y = 0.5 * y * (1.0 + torch.erf(y / math.sqrt(2.0)))
        return y / self.divisor


batch_size = 1024
in_features = 8192
out_features = 8192
divisor = 2.0


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, divisor]
