import torch
import torch.nn as nn


class Model(nn.Module):
    """Gated residual unit: LayerNorm(x + sigmoid(Wg x) * tanh(Wv x)), then a softplus output head."""

    def __init__(self, d, d_out):
        super().__init__()
        self.gate = nn.Linear(d, d)
        self.value = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, d_out)

    def forward(self, x):
        h = self.norm(x + torch.sigmoid(self.gate(x)) * torch.tanh(self.value(x)))
        return nn.functional.softplus(self.head(h))


batch_size, d, d_out = 512, 1024, 256


def get_inputs():
    return [torch.randn(batch_size, d)]


def get_init_inputs():
    return [d, d_out]
