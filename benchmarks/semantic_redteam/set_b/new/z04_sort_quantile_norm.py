import torch
import torch.nn as nn


class Model(nn.Module):
    """Quantile normalization across columns: each column's sorted values replaced by the mean sorted profile."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        s, idx = torch.sort(x, dim=0)
        ref = s.mean(dim=1, keepdim=True).expand_as(s)
        out = torch.empty_like(x)
        out.scatter_(0, idx, ref)
        return out


rows, cols = 4096, 512


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
