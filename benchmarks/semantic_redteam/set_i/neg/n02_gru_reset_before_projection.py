import math
import torch
import torch.nn as nn


class GRULayer(nn.Module):
    """GRU layer in the original formulation: the reset gate scales the previous hidden state
    before the recurrent projection of the candidate, n = tanh(W_in x + b_in + W_hn (r * h) + b_hn)."""

    def __init__(self, input_size, hidden_size):
        super().__init__()
        k = 1.0 / math.sqrt(hidden_size)
        self.W_ih = nn.Parameter(torch.empty(3 * hidden_size, input_size).uniform_(-k, k))
        self.W_hh = nn.Parameter(torch.empty(3 * hidden_size, hidden_size).uniform_(-k, k))
        self.b_ih = nn.Parameter(torch.empty(3 * hidden_size).uniform_(-k, k))
        self.b_hh = nn.Parameter(torch.empty(3 * hidden_size).uniform_(-k, k))
        self.H = hidden_size

    def forward(self, xs, h):
        H = self.H
        W_hr, W_hz, W_hn = self.W_hh.split(H, dim=0)
        b_hr, b_hz, b_hn = self.b_hh.split(H, dim=0)
        outs = []
        for t in range(xs.shape[0]):
            gi = xs[t] @ self.W_ih.T + self.b_ih
            i_r, i_z, i_n = gi.chunk(3, dim=-1)
            r = torch.sigmoid(i_r + h @ W_hr.T + b_hr)
            z = torch.sigmoid(i_z + h @ W_hz.T + b_hz)
            n = torch.tanh(i_n + (r * h) @ W_hn.T + b_hn)
            h = (1 - z) * n + z * h
            outs.append(h)
        return torch.stack(outs, dim=0)


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers=3, bias=True, batch_first=False):
        super().__init__()
        self.batch_first = batch_first
        self.layers = nn.ModuleList(
            [GRULayer(input_size if l == 0 else hidden_size, hidden_size) for l in range(num_layers)]
        )

    def forward(self, x, h0):
        if self.batch_first:
            x = x.transpose(0, 1)
        for l, layer in enumerate(self.layers):
            x = layer(x, h0[l])
        return x.transpose(0, 1) if self.batch_first else x


batch_size = 3
seq_len = 6
input_size = 8
hidden_size = 16
num_layers = 2


def get_inputs():
    return [torch.rand(seq_len, batch_size, input_size), torch.rand((num_layers, batch_size, hidden_size))]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
