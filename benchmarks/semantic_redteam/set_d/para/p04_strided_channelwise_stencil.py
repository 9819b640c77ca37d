import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Per-channel spatial stencil computed as a sum of shifted, strided slices."""

    def __init__(self, in_channels: int, kernel_size: int, stride: int = 1, padding: int = 0, bias: bool = False):
        super().__init__()
        self.k, self.s, self.p = kernel_size, stride, padding
        bound = 1.0 / kernel_size
        self.taps = nn.Parameter(torch.empty(kernel_size, kernel_size, in_channels).uniform_(-bound, bound))
        self.offset = nn.Parameter(torch.empty(in_channels).uniform_(-bound, bound)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k, s, p = self.k, self.s, self.p
        xp = F.pad(x, (p, p, p, p))
        ho = (xp.shape[2] - k) // s + 1
        wo = (xp.shape[3] - k) // s + 1
        acc = None
        for i in range(k):
            for j in range(k):
                piece = xp[:, :, i:i + s * (ho - 1) + 1:s, j:j + s * (wo - 1) + 1:s]
                term = piece * self.taps[i, j].view(1, -1, 1, 1)
                acc = term if acc is None else acc + term
        if self.offset is not None:
            acc = acc + self.offset.view(1, -1, 1, 1)
        return acc


def get_inputs():
    return [torch.rand(2, 6, 17, 14)]


def get_init_inputs():
    return [6, 5, 2, 1]
