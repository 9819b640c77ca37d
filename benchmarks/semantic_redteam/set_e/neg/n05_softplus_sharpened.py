import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Softplus with sharpness beta = 1.01: log(1 + exp(1.01 x)) / 1.01.

    At x = 0 it is log(2)/1.01, 6.9e-3 below log(2); on [0, 1] the gap stays about 6e-3 (relative
    ~5e-3). Parameter-free, so no tie applies.
    """

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.softplus(x, beta=1.01)


def get_inputs():
    return [torch.rand(16, 64)]


def get_init_inputs():
    return []
