import torch
import torch.nn as nn


class Model(nn.Module):
    """Sigmoid-form GELU approximation x * sigmoid(1.702 x).

    Differs from the exact erf GELU by up to 6.4e-3 on [0, 1] (2.0e-2 near x = -2.3); there are no
    weights, so no tie can close the gap.
    """

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


def get_inputs():
    return [torch.rand(16, 64)]


def get_init_inputs():
    return []
