import torch
import torch.nn as nn


class Model(nn.Module):
    """Feed-forward stack; weights stored input-major (x @ W + b)."""

    def __init__(self, input_size, layer_sizes, output_size):
        super().__init__()
        dims = [input_size] + list(layer_sizes) + [output_size]
        self.W = nn.ParameterList([nn.Parameter(torch.randn(a, b) * a ** -0.5) for a, b in zip(dims, dims[1:])])
        self.b = nn.ParameterList([nn.Parameter(torch.zeros(b)) for b in dims[1:]])

    def forward(self, x):
        last = len(self.W) - 1
        for i, (w, b) in enumerate(zip(self.W, self.b)):
            x = torch.addmm(b, x, w)
            if i < last:
                x = x.clamp(min=0)
        return x


batch_size = 128
input_size = 16384
layer_sizes = [16384, 16384]
output_size = 8192


def get_inputs():
    return [torch.rand(batch_size, input_size)]


def get_init_inputs():
    return [input_size, layer_sizes, output_size]
