import torch
import torch.nn as nn


class Model(nn.Module):
    """Max reduction. `dim` counts axes after the batch axis, so the reduced axis is dim + 1."""

    def __init__(self, dim: int):
        super().__init__()
        self.axis = dim + 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.amax(dim=self.axis)


batch_size = 4
dim1 = 32
dim2 = 32


def get_inputs():
    return [torch.rand(batch_size, dim1, dim2)]


def get_init_inputs():
    return [1]
