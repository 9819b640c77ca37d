import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """Elman recurrence with separate input and recurrent maps (tensordot), tanh, and a linear readout
    at every step."""

    def __init__(self, n_in, n_hid, n_out):
        super().__init__()
        r = 1.0 / math.sqrt(n_in + n_hid)
        self.Wx = nn.Parameter(torch.empty(n_hid, n_in).uniform_(-r, r))
        self.Wh = nn.Parameter(torch.empty(n_hid, n_hid).uniform_(-r, r))
        self.bh = nn.Parameter(torch.empty(n_hid).uniform_(-r, r))
        ro = 1.0 / math.sqrt(n_hid)
        self.Wo = nn.Parameter(torch.empty(n_out, n_hid).uniform_(-ro, ro))
        self.bo = nn.Parameter(torch.empty(n_out).uniform_(-ro, ro))

    def forward(self, x, h0):
        h = h0
        ys = []
        for t in range(x.shape[0]):
            h = torch.tanh(torch.tensordot(x[t], self.Wx, dims=([1], [1]))
                           + torch.tensordot(h, self.Wh, dims=([1], [1])) + self.bh)
            ys.append(torch.tensordot(h, self.Wo, dims=([1], [1])) + self.bo)
        return torch.stack(ys)


def get_inputs():
    return [torch.rand(7, 4, 20), torch.rand(4, 16)]


def get_init_inputs():
    return [20, 16, 9]
