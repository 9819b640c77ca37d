import torch
import torch.nn as nn


class Model(nn.Module):
    """Column-wise log-probabilities (normalizing over the batch axis), with an explicit max shift."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        m = x.amax(dim=0, keepdim=True)
        s = x - m
        return s - s.exp().sum(dim=0, keepdim=True).log()


batch_size = 512
dim = 65536


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
