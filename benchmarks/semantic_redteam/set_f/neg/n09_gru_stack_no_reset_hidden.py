import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """Stacked gated recurrence over a time-major sequence with PyTorch's (r, z, n) weight layout;
    returns the final hidden state of every layer. The candidate reads the full recurrent term
    W_hn h + b_hn (no reset gating)."""

    def __init__(self, n_in, n_hidden, n_layers=3, bias=True, batch_first=False):
        super().__init__()
        self.H = n_hidden
        r = 1.0 / math.sqrt(n_hidden)
        u = lambda *s: nn.Parameter(torch.empty(*s).uniform_(-r, r))
        self.wx = nn.ParameterList([u(3 * n_hidden, n_in if l == 0 else n_hidden) for l in range(n_layers)])
        self.wh = nn.ParameterList([u(3 * n_hidden, n_hidden) for _ in range(n_layers)])
        self.bx = nn.ParameterList([u(3 * n_hidden) for _ in range(n_layers)])
        self.bh = nn.ParameterList([u(3 * n_hidden) for _ in range(n_layers)])

    def forward(self, x, h0):
        seq, finals = x, []
        for l in range(len(self.wx)):
            h, outs = h0[l], []
            for t in range(seq.shape[0]):
                gx = seq[t] @ self.wx[l].t() + self.bx[l]
                gh = h @ self.wh[l].t() + self.bh[l]
                xr, xz, xn = gx.chunk(3, dim=1)
                hr, hz, hn = gh.chunk(3, dim=1)
                z = torch.sigmoid(xz + hz)
                n = torch.tanh(xn + hn)
                h = (1 - z) * n + z * h
                outs.append(h)
            seq = torch.stack(outs)
            finals.append(h)
        return torch.stack(finals)


def get_inputs():
    return [torch.rand(5, 3, 12), torch.rand(2, 3, 16)]


def get_init_inputs():
    return [12, 16, 2]
