import torch
import torch.nn as nn


def row_energy(t):
    return torch.einsum("bi...,bi...->b...", t, t).unsqueeze(1)


class Model(nn.Module):
    """Rescale each sample so its feature vector has unit Euclidean length."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / row_energy(x).sqrt()


batch_size = 1024
dim = 4095


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
