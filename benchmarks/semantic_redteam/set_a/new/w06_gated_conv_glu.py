import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv2d producing 2C channels, GLU over channels, then pixel shuffle upsampling."""

    def __init__(self, cin, c, k, r):
        super().__init__()
        self.conv = nn.Conv2d(cin, 2 * c * r * r, k, padding=k // 2)
        self.r = r

    def forward(self, x):
        return F.pixel_shuffle(F.glu(self.conv(x), dim=1), self.r)


batch_size, cin, c, k, r, h, w = 16, 32, 16, 3, 2, 64, 64


def get_inputs():
    return [torch.randn(batch_size, cin, h, w)]


def get_init_inputs():
    return [cin, c, k, r]
