import math
import torch
import torch.nn as nn


class _Cell(nn.Module):
    def __init__(self, n_in, n_hid):
        super().__init__()
        r = 1.0 / math.sqrt(n_hid)
        u = lambda *s: nn.Parameter(torch.empty(*s).uniform_(-r, r))
        self.w_x = nn.ParameterList([u(n_hid, n_in) for _ in range(3)])
        self.w_h = nn.ParameterList([u(n_hid, n_hid) for _ in range(3)])
        self.b_x = nn.ParameterList([u(n_hid) for _ in range(3)])
        self.b_h = nn.ParameterList([u(n_hid) for _ in range(3)])

    def forward(self, x, h):
        gx = [x @ w.t() + b for w, b in zip(self.w_x, self.b_x)]
        r = torch.sigmoid(gx[0] + h @ self.w_h[0].t() + self.b_h[0])
        z = torch.sigmoid(gx[1] + h @ self.w_h[1].t() + self.b_h[1])
        # original formulation: the reset gate scales the state BEFORE the recurrent map
        n = torch.tanh(gx[2] + (r * h) @ self.w_h[2].t() + self.b_h[2])
        return (1 - z) * n + z * h


class Model(nn.Module):
    """Stacked GRU in the original (Cho et al.) form: candidate = tanh(W x + U (r * h) + b), time-major,
    returns the top layer at every step.

    The framework GRU uses r * (U h + b_h) instead; U (r*h) and r * (U h) differ for any U that is
    not diagonal (r varies per unit and per step), and the recurrent bias is gated in one form and
    not in the other, so no tie of the gate weights makes them agree.
    """

    def __init__(self, input_size, hidden_size, num_layers=3, bias=True, batch_first=False):
        super().__init__()
        self.cells = nn.ModuleList(
            [_Cell(input_size if i == 0 else hidden_size, hidden_size) for i in range(num_layers)]
        )

    def forward(self, x, h0):
        seq = x
        for l, cell in enumerate(self.cells):
            h, outs = h0[l], []
            for t in range(seq.shape[0]):
                h = cell(seq[t], h)
                outs.append(h)
            seq = torch.stack(outs, 0)
        return seq


def get_inputs():
    return [torch.rand(5, 3, 12), torch.rand(2, 3, 16)]


def get_init_inputs():
    return [12, 16, 2]
