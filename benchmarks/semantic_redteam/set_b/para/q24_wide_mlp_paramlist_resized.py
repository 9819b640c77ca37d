import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """Wide two-hidden-layer perceptron with weights stored input-major, evaluated with einsum."""

    def __init__(self, input_size, hidden_layer_sizes, output_size):
        super().__init__()
        dims = [input_size] + list(hidden_layer_sizes) + [output_size]
        self.Ws = nn.ParameterList()
        self.bs = nn.ParameterList()
        for a, b in zip(dims[:-1], dims[1:]):
            bound = 1.0 / math.sqrt(a)
            self.Ws.append(nn.Parameter(torch.empty(a, b).uniform_(-bound, bound)))
            self.bs.append(nn.Parameter(torch.empty(b).uniform_(-bound, bound)))

    def forward(self, x):
        n = len(self.Ws)
        for i, (W, b) in enumerate(zip(self.Ws, self.bs)):
            x = torch.einsum("ni,io->no", x, W) + b
            if i < n - 1:
                x = x.clamp_min(0)
        return x


batch_size = 64
input_size = 4096
hidden_layer_sizes = [8192, 8192]
output_size = 2048


def get_inputs():
    return [torch.rand(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_layer_sizes, output_size]
