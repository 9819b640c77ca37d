import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """Multi-layer gated recurrent unit written out gate by gate (reset, update, candidate); per-gate
    input and recurrent maps stored (in, hidden); returns the top layer's state at every step."""

    def __init__(self, n_in, n_hid, n_layers=3):
        super().__init__()
        r = 1.0 / math.sqrt(n_hid)
        u = lambda *s: nn.Parameter(torch.empty(*s).uniform_(-r, r))
        self.n_layers, self.n_hid = n_layers, n_hid
        self.Wr, self.Wz, self.Wn = nn.ParameterList(), nn.ParameterList(), nn.ParameterList()
        self.Ur, self.Uz, self.Un = nn.ParameterList(), nn.ParameterList(), nn.ParameterList()
        self.br, self.bz, self.bn, self.cr, self.cz, self.cn = [nn.ParameterList() for _ in range(6)]
        for l in range(n_layers):
            d = n_in if l == 0 else n_hid
            for lst in (self.Wr, self.Wz, self.Wn):
                lst.append(u(d, n_hid))
            for lst in (self.Ur, self.Uz, self.Un):
                lst.append(u(n_hid, n_hid))
            for lst in (self.br, self.bz, self.bn, self.cr, self.cz, self.cn):
                lst.append(u(n_hid))

    def forward(self, x, h0):
        seq = x
        for l in range(self.n_layers):
            h = h0[l]
            outs = []
            for t in range(seq.shape[0]):
                xt = seq[t]
                r = torch.sigmoid(xt @ self.Wr[l] + self.br[l] + h @ self.Ur[l] + self.cr[l])
                z = torch.sigmoid(xt @ self.Wz[l] + self.bz[l] + h @ self.Uz[l] + self.cz[l])
                n = torch.tanh(xt @ self.Wn[l] + self.bn[l] + r * (h @ self.Un[l] + self.cn[l]))
                h = n + z * (h - n)
                outs.append(h)
            seq = torch.stack(outs)
        return seq


def get_inputs():
    return [torch.rand(5, 3, 10), torch.rand(2, 3, 12)]


def get_init_inputs():
    return [10, 12, 2]
