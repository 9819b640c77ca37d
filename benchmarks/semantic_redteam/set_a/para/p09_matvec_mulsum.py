import torch
import torch.nn as nn


class Model(nn.Module):
    """Dot product of every row of a matrix with one column vector."""

    def forward(self, mat, vec):
        return (mat * vec.reshape(1, -1)).sum(dim=1, keepdim=True)


M = 2048
K = 1048576


def get_inputs():
    return [torch.rand(M, K), torch.rand(K, 1)]


def get_init_inputs():
    return []
