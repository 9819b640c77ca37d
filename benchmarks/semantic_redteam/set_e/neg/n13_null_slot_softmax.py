import torch
import torch.nn as nn


class Model(nn.Module):
    """Row softmax with an extra implicit zero logit ("softmax plus one"): exp(x_i) / (1 + sum_j exp(x_j)).

    Rows no longer sum to one; each entry is the ordinary softmax times S / (1 + S) with S the row's
    exponential sum (~20 for 12 logits in [0, 1]), i.e. ~5% smaller. Parameter-free, so no tie applies.
    """

    def __init__(self):
        super().__init__()

    def forward(self, x):
        m = torch.clamp(x.max(dim=1, keepdim=True).values, min=0.0)
        e = torch.exp(x - m)
        return e / (torch.exp(-m) + e.sum(dim=1, keepdim=True))


def get_inputs():
    return [torch.rand(8, 12)]


def get_init_inputs():
    return []
