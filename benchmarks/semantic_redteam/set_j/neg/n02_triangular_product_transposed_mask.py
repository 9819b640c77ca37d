import torch
import torch.nn as nn

N = 48


class Model(nn.Module):
    """Product of two triangular matrices (einsum) masked with a precomputed triangular 0/1 mask."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        n = A.shape[0]
        keep = torch.ones(n, n, dtype=A.dtype, device=A.device).triu().t()
        return torch.einsum("ik,kj->ij", A, B) * keep


def get_inputs():
    return [torch.triu(torch.rand(N, N)), torch.triu(torch.rand(N, N))]


def get_init_inputs():
    return []
