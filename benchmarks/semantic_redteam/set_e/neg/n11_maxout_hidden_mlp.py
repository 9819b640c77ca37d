import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """MLP whose first hidden layer is a maxout layer: a projection of width layer_sizes[0] is cut into
    two halves that are merged by an elementwise max (so the layer outputs layer_sizes[0] // 2 units);
    later layers are rectified, the read-out affine.

    Tying the two halves to the two halves of a rectified layer of width layer_sizes[0] gives
    max(a, b) where the rectified layer gives [relu(a), relu(b)] (twice as many units, feeding a
    wider next layer); max(a, b) is neither relu(a) nor relu(b) whenever both halves carry weights.
    """

    def __init__(self, input_size, layer_sizes, output_size):
        super().__init__()
        half = layer_sizes[0] // 2
        self.piece_a = nn.Linear(input_size, half)
        self.piece_b = nn.Linear(input_size, half)
        widths = [half] + list(layer_sizes[1:])
        self.rest = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:]))
        self.read = nn.Linear(widths[-1], output_size)

    def forward(self, x):
        h = torch.maximum(self.piece_a(x), self.piece_b(x))
        for m in self.rest:
            h = F.relu(m(h))
        return self.read(h)


def get_inputs():
    return [torch.rand(6, 24)]


def get_init_inputs():
    return [24, [32, 12], 10]
