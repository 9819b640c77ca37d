import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """Stacked GRU by hand returning the last state of every layer. Input maps stored (in, 3H), recurrent
    maps (H, 3H); the reset/update biases of the two maps are merged into one (2H) vector per layer."""

    def __init__(self, n_in, n_hid, n_layers=3):
        super().__init__()
        r = 1.0 / math.sqrt(n_hid)
        self.H, self.L = n_hid, n_layers
        self.wx = nn.ParameterList()
        self.wh = nn.ParameterList()
        self.b_rz = nn.ParameterList()
        self.bx_n = nn.ParameterList()
        self.bh_n = nn.ParameterList()
        for l in range(n_layers):
            d = n_in if l == 0 else n_hid
            self.wx.append(nn.Parameter(torch.empty(d, 3 * n_hid).uniform_(-r, r)))
            self.wh.append(nn.Parameter(torch.empty(n_hid, 3 * n_hid).uniform_(-r, r)))
            self.b_rz.append(nn.Parameter(torch.empty(2 * n_hid).uniform_(-2 * r, 2 * r)))
            self.bx_n.append(nn.Parameter(torch.empty(n_hid).uniform_(-r, r)))
            self.bh_n.append(nn.Parameter(torch.empty(n_hid).uniform_(-r, r)))

    def forward(self, x, h0):
        H = self.H
        finals = []
        seq = x
        for l in range(self.L):
            h = h0[l]
            gx_all = torch.tensordot(seq, self.wx[l], dims=([2], [0]))  # (T, B, 3H)
            outs = []
            for t in range(seq.shape[0]):
                gx, gh = gx_all[t], h @ self.wh[l]
                rz = torch.sigmoid(gx[:, : 2 * H] + gh[:, : 2 * H] + self.b_rz[l])
                r, z = rz[:, :H], rz[:, H:]
                n = torch.tanh(gx[:, 2 * H :] + self.bx_n[l] + r * (gh[:, 2 * H :] + self.bh_n[l]))
                h = (1 - z) * n + z * h
                outs.append(h)
            seq = torch.stack(outs)
            finals.append(h)
        return torch.stack(finals)


def get_inputs():
    return [torch.rand(6, 2, 9), torch.rand(3, 2, 11)]


def get_init_inputs():
    return [9, 11, 3]
