import torch
import torch.nn as nn


class Model(nn.Module):
    """Dense layer, logistic activation, then per-unit total over the batch."""

    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.linear = nn.Linear(input_size, hidden_size)

    def forward(self, x):
        return torch.sigmoid(self.linear(x)).sum(dim=0, keepdim=True)


batch_size = 128
input_size = 32768
hidden_size = 32768


def get_inputs():
    return [torch.rand(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size]
