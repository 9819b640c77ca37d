import torch
import torch.nn as nn


class Model(nn.Module):
    """Valid convolution shifted down by two constants (folded into the bias at construction),
    then a self-gated activation x * tanh(softplus_2(x)) where softplus_2(x) = log(1 + e^{2x}) / 2."""

    def __init__(self, c_in, c_out, k, shift_a, shift_b):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, k)
        with torch.no_grad():
            self.conv.bias.sub_(shift_a + shift_b)

    def forward(self, x):
        y = self.conv(x)
        return y * torch.tanh(0.5 * torch.logaddexp(2.0 * y, torch.zeros_like(y)))


def get_inputs():
    return [torch.rand(2, 8, 20, 20)]


def get_init_inputs():
    return [8, 64, 3, 0.5, 0.2]
