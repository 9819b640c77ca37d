import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Bidirectional multi-layer LSTM written as explicit scans. Parameters for (layer, direction)
    live at index 2 * layer + direction of the parameter lists; each layer feeds the concatenation
    of its forward and backward outputs to the next one. The last time step of the top layer goes
    through a linear read-out."""

    def __init__(self, input_size, hidden_size, num_layers, output_size, dropout=0.0):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.dropout = dropout
        k = 1.0 / math.sqrt(hidden_size)
        self.w_ih = nn.ParameterList()
        self.w_hh = nn.ParameterList()
        self.b_ih = nn.ParameterList()
        self.b_hh = nn.ParameterList()
        for layer in range(num_layers):
            in_dim = input_size if layer == 0 else 2 * hidden_size
            for _direction in range(2):
                self.w_ih.append(nn.Parameter(torch.empty(4 * hidden_size, in_dim).uniform_(-k, k)))
                self.w_hh.append(nn.Parameter(torch.empty(4 * hidden_size, hidden_size).uniform_(-k, k)))
                self.b_ih.append(nn.Parameter(torch.empty(4 * hidden_size).uniform_(-k, k)))
                self.b_hh.append(nn.Parameter(torch.empty(4 * hidden_size).uniform_(-k, k)))
        self.fc = nn.Linear(2 * hidden_size, output_size)

    def _scan(self, xs, h, c, idx, reverse):
        W_ih, W_hh, b_ih, b_hh = self.w_ih[idx], self.w_hh[idx], self.b_ih[idx], self.b_hh[idx]
        steps = xs.shape[1]
        order = range(steps - 1, -1, -1) if reverse else range(steps)
        outs = [None] * steps
        for t in order:
            gates = xs[:, t] @ W_ih.T + b_ih + h @ W_hh.T + b_hh
            i, f, g, o = gates.chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outs[t] = h
        return torch.stack(outs, dim=1)

    def forward(self, x, h0, c0):
        seq = x
        for layer in range(self.num_layers):
            fwd = self._scan(seq, h0[2 * layer], c0[2 * layer], 2 * layer, reverse=False)
            bwd = self._scan(seq, h0[2 * layer + 1], c0[2 * layer + 1], 2 * layer + 1, reverse=True)
            seq = torch.cat([fwd, bwd], dim=-1)
            if layer < self.num_layers - 1:
                seq = F.dropout(seq, p=self.dropout, training=self.training)
        return self.fc(seq[:, -1, :])


batch_size = 3
sequence_length = 6
input_size = 12
hidden_size = 16
num_layers = 2
output_size = 4
dropout = 0.0


def get_inputs():
    return [
        torch.rand(batch_size, sequence_length, input_size),
        torch.rand((num_layers * 2, batch_size, hidden_size)),
        torch.rand((num_layers * 2, batch_size, hidden_size)),
    ]


def get_init_inputs():
    return [input_size, hidden_size, num_layers, output_size, dropout]
