import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Rectified MLP whose first hidden layer is computed as two half-width blocks (concatenated)
    and whose read-out is accumulated from two half-width slices of the last hidden layer."""

    def __init__(self, input_size, layer_sizes, output_size):
        super().__init__()
        first = layer_sizes[0]
        assert first % 2 == 0 and layer_sizes[-1] % 2 == 0
        self.lo = nn.Linear(input_size, first // 2)
        self.hi = nn.Linear(input_size, first // 2)
        self.mid = nn.ModuleList(nn.Linear(a, b) for a, b in zip(layer_sizes[:-1], layer_sizes[1:]))
        half = layer_sizes[-1] // 2
        self.half = half
        self.read_a = nn.Linear(half, output_size)
        self.read_b = nn.Linear(half, output_size, bias=False)

    def forward(self, x):
        h = F.relu(torch.cat([self.lo(x), self.hi(x)], dim=1))
        for m in self.mid:
            h = F.relu(m(h))
        return self.read_a(h[:, : self.half]) + self.read_b(h[:, self.half :])


def get_inputs():
    return [torch.rand(6, 24)]


def get_init_inputs():
    return [24, [32, 20], 12]
