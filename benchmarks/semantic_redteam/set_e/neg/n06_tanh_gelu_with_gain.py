import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """Tanh-form GELU with a calibrated output gain of 1.002.

    Exactly 1.002 times the usual tanh-GELU: a relative change of 2e-3 everywhere (1.7e-3 absolute
    at x = 1). Parameter-free, so no tie applies.
    """

    def __init__(self):
        super().__init__()
        self.c = math.sqrt(2.0 / math.pi)

    def forward(self, x):
        return 0.501 * x * (1.0 + torch.tanh(self.c * (x + 0.044715 * x * x * x)))


def get_inputs():
    return [torch.rand(16, 64)]


def get_init_inputs():
    return []
