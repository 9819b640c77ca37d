import torch
import torch.nn as nn


class Model(nn.Module):
    """Projection followed by a self-gated (x * sigma(x)) activation and a constant gain."""

    def __init__(self, d_in, d_out, gain):
        super().__init__()
        self.gain = gain
        k = 1.0 / d_in ** 0.5
        self.kernel = nn.Parameter(torch.empty(d_out, d_in).uniform_(-k, k))
        self.offset = nn.Parameter(torch.empty(d_out).uniform_(-k, k))

    def forward(self, x):
        z = torch.tensordot(x, self.kernel, dims=([1], [1])) + self.offset
        gated = z / (1.0 + torch.exp(-z))
        return self.gain * gated


batch_size = 32
d_in = 512
d_out = 768
gain = 1.5


def get_inputs():
    return [torch.rand(batch_size, d_in)]


def get_init_inputs():
    return [d_in, d_out, gain]
