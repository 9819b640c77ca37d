import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """Stacked LSTM-style recurrence with an accumulating memory: the cell keeps everything it
    has written (c <- c + i * g) instead of learning a forget gate, so each layer packs three
    gate blocks (input, candidate, output). Returns the final cell state of every layer."""

    def __init__(self, input_size, hidden_size, num_layers, output_size, dropout=0.0):
        super().__init__()
        self.num_layers = num_layers
        k = 1.0 / math.sqrt(hidden_size)
        self.W_ih = nn.ParameterList()
        self.W_hh = nn.ParameterList()
        self.b_ih = nn.ParameterList()
        self.b_hh = nn.ParameterList()
        for l in range(num_layers):
            in_dim = input_size if l == 0 else hidden_size
            self.W_ih.append(nn.Parameter(torch.empty(3 * hidden_size, in_dim).uniform_(-k, k)))
            self.W_hh.append(nn.Parameter(torch.empty(3 * hidden_size, hidden_size).uniform_(-k, k)))
            self.b_ih.append(nn.Parameter(torch.empty(3 * hidden_size).uniform_(-k, k)))
            self.b_hh.append(nn.Parameter(torch.empty(3 * hidden_size).uniform_(-k, k)))
        self.fc = nn.Linear(hidden_size, output_size)

    def forward(self, x, h0, c0):
        layer_in = x
        c_final = []
        for l in range(self.num_layers):
            h, c = h0[l], c0[l]
            outs = []
            for t in range(x.shape[1]):
                gates = layer_in[:, t] @ self.W_ih[l].T + self.b_ih[l] + h @ self.W_hh[l].T + self.b_hh[l]
                i, g, o = gates.chunk(3, dim=-1)
                c = c + torch.sigmoid(i) * torch.tanh(g)
                h = torch.sigmoid(o) * torch.tanh(c)
                outs.append(h)
            layer_in = torch.stack(outs, dim=1)
            c_final.append(c)
        _ = self.fc(layer_in[:, -1, :])
        return torch.stack(c_final, dim=0)


batch_size = 3
sequence_length = 6
input_size = 8
hidden_size = 16
num_layers = 2
output_size = 4
dropout = 0.0


def get_inputs():
    return [
        torch.rand(batch_size, sequence_length, input_size),
        torch.rand((num_layers, batch_size, hidden_size)),
        torch.rand((num_layers, batch_size, hidden_size)),
    ]


def get_init_inputs():
    return [input_size, hidden_size, num_layers, output_size, dropout]
