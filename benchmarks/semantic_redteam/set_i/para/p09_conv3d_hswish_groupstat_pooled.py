import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def hard_swish(t):
    return t * torch.clamp(t + 3.0, 0.0, 6.0) / 6.0


class Model(nn.Module):
    """3-D convolution -> hard-swish -> group normalisation -> global spatial average, with the
    last two fused: since the average of a normalised channel only needs that channel's spatial
    mean, the output is gamma * (channel_mean - group_mean) / group_std + beta."""

    def __init__(self, in_channels, out_channels, kernel_size, num_groups=4, bias=True, eps=1e-5):
        super().__init__()
        self.num_groups = num_groups
        self.eps = eps
        fan_in = in_channels * kernel_size ** 3
        bound = 1.0 / math.sqrt(fan_in)
        self.weight = nn.Parameter(
            torch.empty(out_channels, in_channels, kernel_size, kernel_size, kernel_size).uniform_(-bound, bound)
        )
        self.bias = nn.Parameter(torch.empty(out_channels).uniform_(-bound, bound)) if bias else None
        self.gamma = nn.Parameter(torch.ones(out_channels))
        self.beta = nn.Parameter(torch.zeros(out_channels))

    def forward(self, x):
        y = hard_swish(F.conv3d(x, self.weight, self.bias))
        B, C = y.shape[:2]
        G = self.num_groups
        flat = y.reshape(B, C, -1)
        ch_mean = flat.sum(dim=-1) / flat.shape[-1]  # (B, C)
        grouped = y.reshape(B, G, -1)
        g_mean = grouped.mean(dim=-1)
        g_var = ((grouped - g_mean.unsqueeze(-1)) ** 2).mean(dim=-1)
        g_mean = g_mean.repeat_interleave(C // G, dim=1)
        g_rstd = torch.rsqrt(g_var + self.eps).repeat_interleave(C // G, dim=1)
        return (ch_mean - g_mean) * g_rstd * self.gamma + self.beta


batch_size = 4
in_channels = 3
out_channels = 16
depth, height, width = 8, 12, 12
kernel_size = 4


def get_inputs():
    return [torch.rand(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
