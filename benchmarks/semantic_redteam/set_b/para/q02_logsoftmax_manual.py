import torch
import torch.nn as nn


class Model(nn.Module):
    """Numerically stable row-wise log-probabilities computed with an explicit max shift."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        m = x.amax(dim=-1, keepdim=True)
        shifted = x - m
        return shifted - shifted.exp().sum(dim=-1, keepdim=True).log()


batch_size = 512
dim = 65536


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
