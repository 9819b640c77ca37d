import torch
import torch.nn as nn


class Model(nn.Module):
    """Deep narrow MLP but with tanh hidden activations instead of ReLU."""

    def __init__(self, input_size, hidden_layer_sizes, output_size):
        super().__init__()
        layers = []
        cur = input_size
        for h in hidden_layer_sizes:
            layers += [nn.Linear(cur, h), nn.Tanh()]
            cur = h
        layers.append(nn.Linear(cur, output_size))
        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)


def get_inputs():
    return [torch.rand(6, 16)]


def get_init_inputs():
    return [16, [12, 12], 5]
