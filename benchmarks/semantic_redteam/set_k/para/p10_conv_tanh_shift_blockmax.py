import torch
import torch.nn as nn
import torch.nn.functional as F


def block_max(t, p):
    n, c, h, w = t.shape
    h2, w2 = h // p, w // p
    t = t[:, :, : h2 * p, : w2 * p]
    return t.reshape(n, c, h2, p, w2, p).amax(dim=(3, 5))


class Model(nn.Module):
    """Convolution, tanh squashing with gain, per-channel offset, and non-overlapping block maxima."""

    def __init__(self, in_ch, out_ch, k, gain, offset_shape, pool):
        super().__init__()
        bound = 1.0 / (in_ch * k * k) ** 0.5
        self.weight = nn.Parameter(torch.empty(out_ch, in_ch, k, k).uniform_(-bound, bound))
        self.conv_bias = nn.Parameter(torch.empty(out_ch).uniform_(-bound, bound))
        self.gain = gain
        self.channel_offset = nn.Parameter(torch.randn(offset_shape).reshape(-1))
        self.pool = pool

    def forward(self, x):
        y = torch.tanh(F.conv2d(x, self.weight, self.conv_bias))
        y = y * self.gain + self.channel_offset[None, :, None, None]
        return block_max(y, self.pool)


batch_size = 4
in_ch = 3
out_ch = 16
height, width = 34, 39
k = 3
gain = 1.5
offset_shape = (out_ch, 1, 1)
pool = 4


def get_inputs():
    return [torch.rand(batch_size, in_ch, height, width)]


def get_init_inputs():
    return [in_ch, out_ch, k, gain, offset_shape, pool]
