import torch
import torch.nn as nn


class Model(nn.Module):
    """Log-normalised exponentials, but taken down the columns (across the batch) rather than across features."""

    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        peak = x.amax(dim=0, keepdim=True)
        s = x - peak
        return s - torch.log(torch.exp(s).sum(dim=0, keepdim=True))


def get_inputs():
    return [torch.rand(5, 40) * 4.0]


def get_init_inputs():
    return []
