import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """Multi-layer GRU over a time-major sequence written with one (in, out) matrix per gate and per
    source (input / recurrent), reset gate applied to the recurrent candidate term; the top layer's
    states are written into a preallocated output."""

    def __init__(self, input_size, hidden_size, num_layers=3, bias=True, batch_first=False):
        super().__init__()
        self.H, self.L = hidden_size, num_layers
        r = 1.0 / math.sqrt(hidden_size)
        p = lambda *s: nn.Parameter(torch.empty(*s).uniform_(-r, r))
        self.U, self.V, self.a, self.c = nn.ParameterList(), nn.ParameterList(), nn.ParameterList(), nn.ParameterList()
        for l in range(num_layers):
            n_in = input_size if l == 0 else hidden_size
            for _ in range(3):  # reset, update, candidate
                self.U.append(p(n_in, hidden_size))
                self.V.append(p(hidden_size, hidden_size))
                self.a.append(p(hidden_size))
                self.c.append(p(hidden_size))

    def forward(self, x, h0):
        T, B = x.shape[0], x.shape[1]
        seq = x
        for l in range(self.L):
            out = x.new_zeros(T, B, self.H)
            h = h0[l]
            k = 3 * l
            for t in range(T):
                xt = seq[t]
                r = torch.sigmoid(xt @ self.U[k] + self.a[k] + h @ self.V[k] + self.c[k])
                z = torch.sigmoid(xt @ self.U[k + 1] + self.a[k + 1] + h @ self.V[k + 1] + self.c[k + 1])
                n = torch.tanh(xt @ self.U[k + 2] + self.a[k + 2] + r * (h @ self.V[k + 2] + self.c[k + 2]))
                h = (1 - z) * n + z * h
                out[t] = h
            seq = out
        return seq


def get_inputs():
    return [torch.rand(4, 10, 128), torch.rand(6, 10, 256)]


def get_init_inputs():
    return [128, 256, 6]
