import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """Stacked GRU whose reset gate multiplies the previous state BEFORE the recurrent candidate map
    (the original 2014 formulation), returning every layer's last state."""

    def __init__(self, n_in, n_hid, n_layers=3):
        super().__init__()
        self.H, self.L = n_hid, n_layers
        self.gru = nn.GRU(n_in, n_hid, n_layers)

    def forward(self, x, h0):
        H = self.H
        seq, finals = x, []
        for l in range(self.L):
            wi, wh = getattr(self.gru, f"weight_ih_l{l}"), getattr(self.gru, f"weight_hh_l{l}")
            bi, bh = getattr(self.gru, f"bias_ih_l{l}"), getattr(self.gru, f"bias_hh_l{l}")
            h, outs = h0[l], []
            for t in range(seq.shape[0]):
                gx = seq[t] @ wi.t() + bi
                gh = h @ wh[: 2 * H].t() + bh[: 2 * H]
                r = torch.sigmoid(gx[:, :H] + gh[:, :H])
                z = torch.sigmoid(gx[:, H : 2 * H] + gh[:, H:])
                n = torch.tanh(gx[:, 2 * H :] + (r * h) @ wh[2 * H :].t() + bh[2 * H :])
                h = (1 - z) * n + z * h
                outs.append(h)
            seq = torch.stack(outs)
            finals.append(h)
        return torch.stack(finals)


def get_inputs():
    return [torch.rand(6, 2, 9), torch.rand(3, 2, 11)]


def get_init_inputs():
    return [9, 11, 3]
