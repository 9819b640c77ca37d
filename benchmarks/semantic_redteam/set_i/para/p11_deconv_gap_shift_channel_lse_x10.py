import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def channel_logsumexp(t):
    # numerically stable log(sum(exp(t))) over dim 1
    m = t.amax(dim=1, keepdim=True)
    return m + torch.log(torch.exp(t - m).sum(dim=1, keepdim=True))


class Model(nn.Module):
    """Transposed convolution, global average over the spatial grid, per-channel learned offset,
    log-sum-exp across channels, scaled by 10."""

    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        bound = 1.0 / math.sqrt(out_channels * kernel_size * kernel_size)
        self.weight = nn.Parameter(
            torch.empty(in_channels, out_channels, kernel_size, kernel_size).uniform_(-bound, bound)
        )
        self.conv_bias = nn.Parameter(torch.empty(out_channels).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        y = F.conv_transpose2d(x, self.weight, self.conv_bias)
        B, C, H, W = y.shape
        pooled = y.sum(dim=(2, 3)) / (H * W)  # (B, C)
        pooled = pooled + self.bias.view(1, C)
        return 10.0 * channel_logsumexp(pooled)  # (B, 1)


batch_size = 16
in_channels = 64
out_channels = 128
height = width = 512
kernel_size = 3
bias_shape = (out_channels, 1, 1)


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, bias_shape]
