import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class GRUDirection(nn.Module):
    """A single-direction GRU layer with packed (reset, update, new) weights."""

    def __init__(self, input_size, hidden_size, bias=True):
        super().__init__()
        k = 1.0 / math.sqrt(hidden_size)
        self.weight_ih = nn.Parameter(torch.empty(3 * hidden_size, input_size).uniform_(-k, k))
        self.weight_hh = nn.Parameter(torch.empty(3 * hidden_size, hidden_size).uniform_(-k, k))
        if bias:
            self.bias_ih = nn.Parameter(torch.empty(3 * hidden_size).uniform_(-k, k))
            self.bias_hh = nn.Parameter(torch.empty(3 * hidden_size).uniform_(-k, k))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)

    def step(self, x_t, h):
        gi = F.linear(x_t, self.weight_ih, self.bias_ih)
        gh = F.linear(h, self.weight_hh, self.bias_hh)
        i_r, i_z, i_n = gi.chunk(3, dim=-1)
        h_r, h_z, h_n = gh.chunk(3, dim=-1)
        r = torch.sigmoid(i_r + h_r)
        z = torch.sigmoid(i_z + h_z)
        n = torch.tanh(i_n + r * h_n)
        return (1 - z) * n + z * h

    def forward(self, xs, h, reverse=False):
        # xs: (seq_len, batch, features)
        steps = xs.shape[0]
        outs = [None] * steps
        for t in (reversed(range(steps)) if reverse else range(steps)):
            h = self.step(xs[t], h)
            outs[t] = h
        return torch.stack(outs, dim=0)


class Model(nn.Module):
    """Bidirectional stacked GRU unrolled in Python; returns the top layer's outputs for every time
    step, forward and backward halves concatenated on the feature axis."""

    def __init__(self, input_size, hidden_size, num_layers=3, bias=True, batch_first=False):
        super().__init__()
        self.batch_first = batch_first
        self.layers = nn.ModuleList()
        for layer in range(num_layers):
            in_dim = input_size if layer == 0 else 2 * hidden_size
            self.layers.append(
                nn.ModuleList([GRUDirection(in_dim, hidden_size, bias), GRUDirection(in_dim, hidden_size, bias)])
            )

    def forward(self, x, h0):
        if self.batch_first:
            x = x.transpose(0, 1)
        seq = x
        for layer, (fwd, bwd) in enumerate(self.layers):
            out_f = fwd(seq, h0[2 * layer])
            out_b = bwd(seq, h0[2 * layer + 1], reverse=True)
            seq = torch.cat([out_f, out_b], dim=-1)
        if self.batch_first:
            seq = seq.transpose(0, 1)
        return seq


batch_size = 3
seq_len = 6
input_size = 8
hidden_size = 16
num_layers = 2


def get_inputs():
    return [torch.rand(seq_len, batch_size, input_size), torch.rand((num_layers * 2, batch_size, hidden_size))]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
