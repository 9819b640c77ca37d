import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Volumetric box filter (uniform cubic kernel, zero padded) applied with a stride, channel by channel."""

    def __init__(self, kernel_size: int, stride: int = None, padding: int = 0):
        super().__init__()
        self.k = kernel_size
        self.s = kernel_size if stride is None else stride
        self.p = padding
        self.register_buffer("box", torch.full((1, 1, kernel_size, kernel_size, kernel_size), 1.0 / kernel_size ** 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c = x.shape[:2]
        flat = x.reshape(n * c, 1, *x.shape[2:])
        y = F.conv3d(flat, self.box, stride=self.s, padding=self.p)
        return y.reshape(n, c, *y.shape[2:])


def get_inputs():
    return [torch.rand(2, 3, 11, 10, 9)]


def get_init_inputs():
    return [4, 3, 1]
