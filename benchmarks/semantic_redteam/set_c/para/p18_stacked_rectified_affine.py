import torch
import torch.nn as nn


class _Dense(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        bound = 1.0 / n_in ** 0.5
        self.wt = nn.Parameter(torch.empty(n_in, n_out).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(n_out).uniform_(-bound, bound))

    def forward(self, x):
        return torch.addmm(self.bias, x, self.wt)


class Model(nn.Module):
    """Feed-forward stack: rectified affine layers followed by a final affine readout."""
    def __init__(self, input_size, layer_sizes, output_size):
        super().__init__()
        dims = [input_size] + list(layer_sizes)
        self.hidden = nn.ModuleList(_Dense(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.readout = _Dense(dims[-1], output_size)

    def forward(self, x):
        for layer in self.hidden:
            h = layer(x)
            x = torch.where(h > 0, h, h.new_zeros(()))
        return self.readout(x)


batch_size = 64
input_size = 512
layer_sizes = [384, 256, 128]
output_size = 10


def get_inputs():
    return [torch.rand(batch_size, input_size)]


def get_init_inputs():
    return [input_size, layer_sizes, output_size]
