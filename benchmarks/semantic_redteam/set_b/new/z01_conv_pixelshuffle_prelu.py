import torch
import torch.nn as nn


class Model(nn.Module):
    """Sub-pixel upsampling block: 3x3 conv to C*r^2 channels, pixel shuffle, PReLU."""

    def __init__(self, cin, cout, r):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout * r * r, 3, padding=1)
        self.shuffle = nn.PixelShuffle(r)
        self.act = nn.PReLU(cout)

    def forward(self, x):
        return self.act(self.shuffle(self.conv(x)))


batch_size, cin, cout, r, h, w = 8, 32, 16, 2, 64, 64


def get_inputs():
    return [torch.rand(batch_size, cin, h, w)]


def get_init_inputs():
    return [cin, cout, r]
