import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """1x1 channel mixing of an image batch, written as a contraction over the channel axis.

    Every output pixel is a linear combination of the input channels at the same location; an optional
    per-output-channel offset is added afterwards."""

    def __init__(self, in_channels: int, out_channels: int, bias: bool = False):
        super().__init__()
        bound = 1.0 / math.sqrt(in_channels)
        self.mix = nn.Parameter(torch.empty(out_channels, in_channels).uniform_(-bound, bound))
        if bias:
            self.offset = nn.Parameter(torch.empty(out_channels).uniform_(-bound, bound))
        else:
            self.register_parameter("offset", None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.einsum("oc,bchw->bohw", self.mix, x)
        if self.offset is not None:
            y = y + self.offset[None, :, None, None]
        return y


batch_size = 16
in_channels = 64
out_channels = 128
width = 1024
height = 1024


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]
