import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """Attention without masks: scores by einsum scaled by 1/sqrt(d), softmax written with exp and a sum,
    then the weighted values."""

    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        s = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(q.shape[-1])
        s = s - s.amax(dim=-1, keepdim=True)
        p = s.exp()
        p = p / p.sum(dim=-1, keepdim=True)
        return torch.einsum("bhqk,bhkd->bhqd", p, v)


def get_inputs():
    return [torch.rand(2, 3, 10, 16), torch.rand(2, 3, 10, 16), torch.rand(2, 3, 10, 16)]


def get_init_inputs():
    return []
