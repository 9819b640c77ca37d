import torch
import torch.nn as nn


def _halve_by_max(t):
    """2x2x2 max pooling with stride 2 (trailing odd slices dropped)."""
    b, c, d, h, w = t.shape
    t = t[:, :, : d - d % 2, : h - h % 2, : w - w % 2]
    t = t.reshape(b, c, d // 2, 2, h // 2, 2, w // 2, 2)
    return t.amax(dim=(3, 5, 7))


def _channel_logsumexp(t):
    m = t.amax(dim=1, keepdim=True)
    return m + (t - m).exp().sum(dim=1, keepdim=True).log()


class Model(nn.Module):
    """3-D convolution, 2x down-sampling by block maximum, log-sum-exp across channels and a final
    rectification (clamp at zero)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        y = _halve_by_max(self.conv(x))
        return _channel_logsumexp(y).clamp_min(0.0)


batch_size = 4
in_channels = 32
out_channels = 64
depth, height, width = 32, 128, 128
kernel_size = 3
stride = 1
padding = 1


def get_inputs():
    return [torch.rand(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding]
