import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """Stacked LSTM written by hand: each layer is one affine map over [x_t, h] producing the four gates
    (input, forget, cell, output) with a single merged bias; returns every layer's final hidden state."""

    def __init__(self, n_in, n_hid, n_layers, n_out, dropout=0.0):
        super().__init__()
        r = 1.0 / math.sqrt(n_hid)
        self.n_hid = n_hid
        self.cells = nn.ModuleList(
            nn.Linear((n_in if l == 0 else n_hid) + n_hid, 4 * n_hid) for l in range(n_layers)
        )
        for c in self.cells:
            nn.init.uniform_(c.weight, -r, r)
            nn.init.uniform_(c.bias, -2 * r, 2 * r)

    def forward(self, x, h0, c0):
        seq = x  # (batch, time, feat)
        finals = []
        for l, cell in enumerate(self.cells):
            h, c = h0[l], c0[l]
            outs = []
            for t in range(seq.shape[1]):
                gi, gf, gg, go = cell(torch.cat([seq[:, t], h], dim=1)).chunk(4, dim=1)
                c = torch.sigmoid(gf) * c + torch.sigmoid(gi) * torch.tanh(gg)
                h = torch.sigmoid(go) * torch.tanh(c)
                outs.append(h)
            seq = torch.stack(outs, dim=1)
            finals.append(h)
        return torch.stack(finals, dim=0)


def get_inputs():
    return [torch.rand(3, 6, 10), torch.rand(2, 3, 14), torch.rand(2, 3, 14)]


def get_init_inputs():
    return [10, 14, 2, 5, 0.0]
