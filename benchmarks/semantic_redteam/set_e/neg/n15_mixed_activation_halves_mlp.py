import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """MLP with a heterogeneous first hidden layer: the first half of its units is rectified, the
    second half goes through tanh (two half-width projections, concatenated); later layers are
    rectified, the read-out affine.

    With the halves tied to the two halves of a fully rectified layer, the tanh units differ from
    relu units (tanh is bounded and odd, relu unbounded and zero for negative inputs), and no
    rescaling tanh(c*u)/c reproduces relu(u); the next layer mixes all units, so the outputs differ.
    """

    def __init__(self, input_size, layer_sizes, output_size):
        super().__init__()
        h = layer_sizes[0] // 2
        self.rect = nn.Linear(input_size, h)
        self.squash = nn.Linear(input_size, layer_sizes[0] - h)
        self.rest = nn.ModuleList(nn.Linear(a, b) for a, b in zip(layer_sizes[:-1], layer_sizes[1:]))
        self.read = nn.Linear(layer_sizes[-1], output_size)

    def forward(self, x):
        z = torch.cat([F.relu(self.rect(x)), torch.tanh(self.squash(x))], dim=1)
        for m in self.rest:
            z = F.relu(m(z))
        return self.read(z)


def get_inputs():
    return [torch.rand(6, 24)]


def get_init_inputs():
    return [24, [32, 12], 10]
