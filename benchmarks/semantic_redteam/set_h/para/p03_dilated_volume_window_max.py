import torch
import torch.nn as nn
import torch.nn.functional as F


def _axis_window_max(t, dim, k, stride, dilation):
    """Sliding max along one axis: windows of k taps spaced `dilation` apart, moved by `stride`."""
    span = dilation * (k - 1) + 1
    windows = t.unfold(dim, span, stride)  # window axis appended last
    return windows[..., ::dilation].amax(dim=-1)


class Model(nn.Module):
    """3-D max pooling over (D, H, W) with padding and dilation, computed separably axis by axis
    (a max over a box is the max over each of its axes in turn). Padded positions never win."""

    def __init__(self, kernel_size: int, stride: int = None, padding: int = 0, dilation: int = 1):
        super().__init__()
        self.k = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.pad = padding
        self.dilation = dilation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = self.pad
        if p > 0:
            x = F.pad(x, (p, p, p, p, p, p), value=float("-inf"))
        for dim in (2, 3, 4):
            x = _axis_window_max(x, dim, self.k, self.stride, self.dilation)
        return x


batch_size = 16
channels = 32
dim1 = 128
dim2 = 128
dim3 = 128
kernel_size = 3
stride = 2
padding = 1
dilation = 3


def get_inputs():
    x = torch.rand(batch_size, channels, dim1, dim2, dim3)
    return [x]


def get_init_inputs():
    return [kernel_size, stride, padding, dilation]
