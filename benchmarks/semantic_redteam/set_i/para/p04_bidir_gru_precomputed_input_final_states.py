import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """Bidirectional multi-layer GRU that returns only the final hidden state of every
    (layer, direction) pair, stacked as (num_layers * 2, batch, hidden). The input-to-hidden
    projection of a whole layer is computed once before the time loop."""

    def __init__(self, input_size, hidden_size, num_layers=3, bias=True, batch_first=False):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.batch_first = batch_first
        k = 1.0 / math.sqrt(hidden_size)
        H = hidden_size
        self.W_ih = nn.ParameterList()
        self.W_hh = nn.ParameterList()
        self.b_ih = nn.ParameterList()
        self.b_hh = nn.ParameterList()
        for layer in range(num_layers):
            in_dim = input_size if layer == 0 else 2 * H
            for _ in range(2):
                self.W_ih.append(nn.Parameter(torch.empty(3 * H, in_dim).uniform_(-k, k)))
                self.W_hh.append(nn.Parameter(torch.empty(3 * H, H).uniform_(-k, k)))
                if bias:
                    self.b_ih.append(nn.Parameter(torch.empty(3 * H).uniform_(-k, k)))
                    self.b_hh.append(nn.Parameter(torch.empty(3 * H).uniform_(-k, k)))
        self.use_bias = bias

    def _run(self, seq, h, idx, reverse):
        H = self.hidden_size
        W_ih, W_hh = self.W_ih[idx], self.W_hh[idx]
        xproj = seq @ W_ih.T
        if self.use_bias:
            xproj = xproj + self.b_ih[idx]
        T = seq.shape[0]
        outs = [None] * T
        for t in (range(T - 1, -1, -1) if reverse else range(T)):
            hproj = h @ W_hh.T
            if self.use_bias:
                hproj = hproj + self.b_hh[idx]
            r = torch.sigmoid(xproj[t, :, :H] + hproj[:, :H])
            z = torch.sigmoid(xproj[t, :, H:2 * H] + hproj[:, H:2 * H])
            n = torch.tanh(xproj[t, :, 2 * H:] + r * hproj[:, 2 * H:])
            h = (1 - z) * n + z * h
            outs[t] = h
        return torch.stack(outs, dim=0), h

    def forward(self, x, h0):
        if self.batch_first:
            x = x.transpose(0, 1)
        seq = x
        finals = []
        for layer in range(self.num_layers):
            out_f, h_f = self._run(seq, h0[2 * layer], 2 * layer, reverse=False)
            out_b, h_b = self._run(seq, h0[2 * layer + 1], 2 * layer + 1, reverse=True)
            finals += [h_f, h_b]
            seq = torch.cat([out_f, out_b], dim=-1)
        return torch.stack(finals, dim=0)


batch_size = 4
seq_len = 5
input_size = 6
hidden_size = 12
num_layers = 3


def get_inputs():
    return [torch.rand(seq_len, batch_size, input_size), torch.rand((num_layers * 2, batch_size, hidden_size))]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
