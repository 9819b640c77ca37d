import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """Stacked long short-term memory over a batch-first sequence, written with one input map and
    one recurrent map per gate (input, forget, cell, output); returns the final cell state of every layer."""

    def __init__(self, input_size, hidden_size, num_layers, output_size, dropout=0.0):
        super().__init__()
        self.H, self.L = hidden_size, num_layers
        r = 1.0 / math.sqrt(hidden_size)
        u = lambda *s: nn.Parameter(torch.empty(*s).uniform_(-r, r))
        self.Wx = nn.ParameterList()
        self.Wh = nn.ParameterList()
        self.bx = nn.ParameterList()
        self.bh = nn.ParameterList()
        for l in range(num_layers):
            n_in = input_size if l == 0 else hidden_size
            for _ in range(4):  # gates i, f, g, o
                self.Wx.append(u(hidden_size, n_in))
                self.Wh.append(u(hidden_size, hidden_size))
                self.bx.append(u(hidden_size))
                self.bh.append(u(hidden_size))

    def forward(self, x, h0, c0):
        seq = x
        cells = []
        for l in range(self.L):
            h, c = h0[l], c0[l]
            g = [4 * l + j for j in range(4)]
            pre = lambda j, xt, h: xt @ self.Wx[g[j]].t() + self.bx[g[j]] + h @ self.Wh[g[j]].t() + self.bh[g[j]]
            outs = []
            for t in range(seq.shape[1]):
                xt = seq[:, t]
                i = torch.sigmoid(pre(0, xt, h))
                f = torch.sigmoid(pre(1, xt, h))
                cc = torch.tanh(pre(2, xt, h))
                o = torch.sigmoid(pre(3, xt, h))
                c = f * c + i * cc
                h = o * torch.tanh(c)
                outs.append(h)
            seq = torch.stack(outs, 1)
            cells.append(c)
        return torch.stack(cells, 0)


def get_inputs():
    return [torch.rand(3, 5, 10), torch.rand(2, 3, 14), torch.rand(2, 3, 14)]


def get_init_inputs():
    return [10, 14, 2, 6, 0.0]
