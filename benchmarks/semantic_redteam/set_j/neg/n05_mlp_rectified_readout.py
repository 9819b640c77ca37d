import torch
import torch.nn as nn


class Model(nn.Module):
    """Deep narrow MLP built as an nn.Sequential of Linear + ReLU pairs, one pair per layer including the output layer."""

    def __init__(self, input_size, hidden_layer_sizes, output_size):
        super().__init__()
        layers = []
        for a, b in zip([input_size, *hidden_layer_sizes], [*hidden_layer_sizes, output_size]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)


def get_inputs():
    return [torch.rand(8, 32)]


def get_init_inputs():
    return [32, [16, 16, 16], 8]
