import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """3D average over cubic windows where padded zeros are NOT counted in the divisor."""

    def __init__(self, kernel_size: int, stride: int = None, padding: int = 0):
        super().__init__()
        self.k = kernel_size
        self.s = kernel_size if stride is None else stride
        self.p = padding

    def forward(self, x):
        n, c = x.shape[:2]
        flat = x.reshape(n * c, 1, *x.shape[2:])
        ones = torch.ones(1, 1, self.k, self.k, self.k, dtype=x.dtype)
        total = F.conv3d(flat, ones, stride=self.s, padding=self.p)
        count = F.conv3d(torch.ones_like(flat[:1]), ones, stride=self.s, padding=self.p)
        y = total / count
        return y.reshape(n, c, *y.shape[2:])


def get_inputs():
    return [torch.rand(2, 3, 9, 8, 7)]


def get_init_inputs():
    return [3, 2, 1]
