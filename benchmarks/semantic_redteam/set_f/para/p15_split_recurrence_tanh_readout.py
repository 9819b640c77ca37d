import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """Elman recurrence with the concatenated input/hidden weight split into an input part and a
    recurrent part (both stored as (in, hidden)); the input drive for every step is computed up
    front with one tensordot, and the linear read-out is applied to all stacked states at the end."""

    def __init__(self, n_in, n_hidden, n_out):
        super().__init__()
        r = 1.0 / math.sqrt(n_in + n_hidden)
        self.u_in = nn.Parameter(torch.empty(n_in, n_hidden).uniform_(-r, r))
        self.u_rec = nn.Parameter(torch.empty(n_hidden, n_hidden).uniform_(-r, r))
        self.c = nn.Parameter(torch.empty(n_hidden).uniform_(-r, r))
        self.readout = nn.Linear(n_hidden, n_out)

    def forward(self, seq, h0):
        drive = torch.tensordot(seq, self.u_in, dims=([2], [0])) + self.c  # (T, B, H)
        h = h0
        states = []
        for t in range(drive.shape[0]):
            h = torch.tanh(torch.addmm(drive[t], h, self.u_rec))
            states.append(h)
        return self.readout(torch.stack(states))


def get_inputs():
    return [torch.rand(5, 3, 1024), torch.rand(3, 256)]


def get_init_inputs():
    return [1024, 256, 128]
