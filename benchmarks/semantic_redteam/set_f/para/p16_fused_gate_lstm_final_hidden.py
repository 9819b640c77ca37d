import math
import torch
import torch.nn as nn


class _FusedCell(nn.Module):
    """One LSTM layer: a single (in + hidden, 4*hidden) matrix acting on [x_t, h] and one summed bias."""

    def __init__(self, n_in, n_hidden):
        super().__init__()
        r = 1.0 / math.sqrt(n_hidden)
        self.w = nn.Parameter(torch.empty(n_in + n_hidden, 4 * n_hidden).uniform_(-r, r))
        self.b = nn.Parameter(torch.empty(4 * n_hidden).uniform_(-2 * r, 2 * r))

    def forward(self, xs, h, c):
        outs = []
        for t in range(xs.shape[1]):
            z = torch.cat([xs[:, t], h], dim=1) @ self.w + self.b
            i, f, g, o = z.chunk(4, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outs.append(h)
        return torch.stack(outs, dim=1), h


class Model(nn.Module):
    """Stacked LSTM over a batch-first sequence built from fused-gate cells; returns the last hidden
    state of every layer, shape (layers, batch, hidden)."""

    def __init__(self, n_in, n_hidden, n_layers, n_out, dropout=0.0):
        super().__init__()
        self.cells = nn.ModuleList(
            _FusedCell(n_in if l == 0 else n_hidden, n_hidden) for l in range(n_layers)
        )

    def forward(self, x, h0, c0):
        finals = []
        seq = x
        for l, cell in enumerate(self.cells):
            seq, h_last = cell(seq, h0[l], c0[l])
            finals.append(h_last)
        return torch.stack(finals, dim=0)


def get_inputs():
    return [torch.rand(2, 5, 128), torch.rand(6, 2, 256), torch.rand(6, 2, 256)]


def get_init_inputs():
    return [128, 256, 6, 10, 0.0]
