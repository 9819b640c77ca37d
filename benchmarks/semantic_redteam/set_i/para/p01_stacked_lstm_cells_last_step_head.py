import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class LSTMLayerCell(nn.Module):
    """One LSTM layer with packed gate weights (input, forget, cell, output)."""

    def __init__(self, input_size, hidden_size):
        super().__init__()
        k = 1.0 / math.sqrt(hidden_size)
        self.W_ih = nn.Parameter(torch.empty(4 * hidden_size, input_size).uniform_(-k, k))
        self.W_hh = nn.Parameter(torch.empty(4 * hidden_size, hidden_size).uniform_(-k, k))
        self.b_ih = nn.Parameter(torch.empty(4 * hidden_size).uniform_(-k, k))
        self.b_hh = nn.Parameter(torch.empty(4 * hidden_size).uniform_(-k, k))

    def forward(self, x_t, h, c):
        gates = x_t @ self.W_ih.T + self.b_ih + h @ self.W_hh.T + self.b_hh
        i, f, g, o = gates.chunk(4, dim=-1)
        i = torch.sigmoid(i)
        f = torch.sigmoid(f)
        g = torch.tanh(g)
        o = torch.sigmoid(o)
        c = f * c + i * g
        h = o * torch.tanh(c)
        return h, c


class Model(nn.Module):
    """Stacked LSTM unrolled step by step over a batch-first sequence; the last layer's hidden
    state at the final time step is projected to `output_size` features. Missing initial states
    are drawn from a standard normal."""

    def __init__(self, input_size, hidden_size, num_layers, output_size, dropout=0.0):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.dropout = dropout
        self.cells = nn.ModuleList(
            [LSTMLayerCell(input_size if l == 0 else hidden_size, hidden_size) for l in range(num_layers)]
        )
        self.head = nn.Linear(hidden_size, output_size)

    def forward(self, x, h0=None, c0=None):
        batch, steps, _ = x.shape
        if h0 is None:
            h0 = torch.randn(self.num_layers, batch, self.hidden_size, device=x.device, dtype=x.dtype)
        if c0 is None:
            c0 = torch.randn(self.num_layers, batch, self.hidden_size, device=x.device, dtype=x.dtype)

        layer_in = x
        for l, cell in enumerate(self.cells):
            h, c = h0[l], c0[l]
            outputs = []
            for t in range(steps):
                h, c = cell(layer_in[:, t, :], h, c)
                outputs.append(h)
            layer_in = torch.stack(outputs, dim=1)
            if l < self.num_layers - 1:
                layer_in = F.dropout(layer_in, p=self.dropout, training=self.training)
        return self.head(layer_in[:, -1, :])


batch_size = 3
sequence_length = 6
input_size = 10
hidden_size = 16
num_layers = 2
output_size = 5
dropout = 0.0


def get_inputs():
    return [torch.rand(batch_size, sequence_length, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers, output_size, dropout]
