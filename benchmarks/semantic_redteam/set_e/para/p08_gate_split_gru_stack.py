import math
import torch
import torch.nn as nn


class _Cell(nn.Module):
    def __init__(self, n_in, n_hid):
        super().__init__()
        mk = lambda a, b: nn.Linear(a, b)
        self.xr, self.xz, self.xn = mk(n_in, n_hid), mk(n_in, n_hid), mk(n_in, n_hid)
        self.hr, self.hz, self.hn = mk(n_hid, n_hid), mk(n_hid, n_hid), mk(n_hid, n_hid)
        r = 1.0 / math.sqrt(n_hid)
        for p in self.parameters():
            nn.init.uniform_(p, -r, r)

    def forward(self, x, h):
        r = torch.sigmoid(self.xr(x) + self.hr(h))
        z = torch.sigmoid(self.xz(x) + self.hz(h))
        n = torch.tanh(self.xn(x) + r * self.hn(h))
        return n + z * (h - n)


class Model(nn.Module):
    """Stacked gated recurrent units (reset/update/candidate gates, each with its own input and
    hidden maps), time-major input, returns every step of the top layer."""

    def __init__(self, input_size, hidden_size, num_layers=3, bias=True, batch_first=False):
        super().__init__()
        self.cells = nn.ModuleList(
            [_Cell(input_size if i == 0 else hidden_size, hidden_size) for i in range(num_layers)]
        )

    def forward(self, x, h0):
        seq = list(x.unbind(0))
        for layer, cell in enumerate(self.cells):
            h = h0[layer]
            outs = []
            for xt in seq:
                h = cell(xt, h)
                outs.append(h)
            seq = outs
        return torch.stack(seq, 0)


def get_inputs():
    return [torch.rand(5, 3, 12), torch.rand(2, 3, 16)]


def get_init_inputs():
    return [12, 16, 2]
