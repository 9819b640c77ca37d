import math
import torch
import torch.nn as nn


def _row_normalised_exp(s):
    s = s - s.amax(dim=-1, keepdim=True)
    e = torch.exp(s)
    return e / e.sum(dim=-1, keepdim=True)


class Model(nn.Module):
    """Queries pick a convex combination of values according to exponentiated, temperature-scaled dot products."""

    def __init__(self):
        super().__init__()

    def forward(self, Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
        q = Q * (1.0 / math.sqrt(Q.shape[-1]))
        w = _row_normalised_exp(torch.einsum("bhqd,bhkd->bhqk", q, K))
        return torch.einsum("bhqk,bhkd->bhqd", w, V)


def get_inputs():
    Q = torch.rand(2, 3, 10, 16)
    K = torch.rand(2, 3, 13, 16)
    V = torch.rand(2, 3, 13, 16)
    return [Q, K, V]


def get_init_inputs():
    return []
