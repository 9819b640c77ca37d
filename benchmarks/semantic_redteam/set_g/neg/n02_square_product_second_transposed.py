import torch
import torch.nn as nn


class Model(nn.Module):
    """Product of a square matrix with the transpose of another: A @ B^T."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.einsum("ik,jk->ij", A, B)


def get_inputs():
    return [torch.rand(64, 64), torch.rand(64, 64)]


def get_init_inputs():
    return []
