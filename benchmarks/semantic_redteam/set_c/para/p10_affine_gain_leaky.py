import torch
import torch.nn as nn


class Model(nn.Module):
    """Affine map (weights stored input-major), constant gain, then a leaky rectifier."""
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        bound = 1.0 / in_features ** 0.5
        self.w_io = nn.Parameter(torch.empty(in_features, out_features).uniform_(-bound, bound))
        self.b = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound))
        self.gain = multiplier
        self.slope = negative_slope

    def forward(self, x):
        t = torch.addmm(self.b, x, self.w_io) * self.gain
        return torch.maximum(t, t * self.slope)


batch_size = 256
in_features = 1024
out_features = 768
multiplier = 2.0
negative_slope = 0.1


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, multiplier, negative_slope]
