import torch
import torch.nn as nn


class Model(nn.Module):
    """Running total along one axis where entries with a false gate contribute nothing (triangular matmul)."""

    def __init__(self, dim):
        super().__init__()
        self.axis = dim

    def forward(self, x, mask):
        kept = torch.where(mask, x, torch.zeros_like(x))
        moved = kept.movedim(self.axis, -1)
        n = moved.shape[-1]
        upper = torch.triu(torch.ones(n, n, dtype=x.dtype, device=x.device))
        return (moved @ upper).movedim(-1, self.axis)


def get_inputs():
    x = torch.rand(3, 4, 25)
    mask = torch.rand(3, 4, 25) > 0.5
    return [x, mask]


def get_init_inputs():
    return [2]
