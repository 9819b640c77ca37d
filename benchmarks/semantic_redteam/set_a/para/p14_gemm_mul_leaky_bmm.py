import torch
import torch.nn as nn


class Model(nn.Module):
    """Affine map (weights kept input-major), doubled, then a leaky rectifier."""

    def __init__(self, d_in, d_out, gain, leak):
        super().__init__()
        self.w_io = nn.Parameter(torch.randn(d_in, d_out) / d_in ** 0.5)
        self.b = nn.Parameter(torch.zeros(d_out))
        self.gain, self.leak = gain, leak

    def forward(self, x):
        h = torch.bmm(x.unsqueeze(0), self.w_io.unsqueeze(0)).squeeze(0)
        h = (h + self.b) * self.gain
        return torch.where(h > 0, h, h * self.leak)


batch_size = 1024
in_features = 8192
out_features = 8192
multiplier = 2.0
negative_slope = 0.1


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, multiplier, negative_slope]
