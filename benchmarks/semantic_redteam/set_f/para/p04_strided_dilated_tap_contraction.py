import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """1-D cross-correlation written as a gather of dilated, strided taps followed by a single
    einsum; the filter bank is stored tap-major as (taps, in_channels, out_channels)."""

    def __init__(self, c_in, c_out, taps, hop=1, gap=1, with_offset=False):
        super().__init__()
        self.taps, self.hop, self.gap = taps, hop, gap
        bound = 1.0 / math.sqrt(c_in * taps)
        self.bank = nn.Parameter(torch.empty(taps, c_in, c_out).uniform_(-bound, bound))
        self.offset = nn.Parameter(torch.empty(c_out).uniform_(-bound, bound)) if with_offset else None

    def forward(self, wave):
        span = (self.taps - 1) * self.gap + 1
        n_out = (wave.shape[-1] - span) // self.hop + 1
        pos = (torch.arange(n_out, device=wave.device) * self.hop)[:, None] + torch.arange(
            self.taps, device=wave.device
        ) * self.gap
        frames = wave[:, :, pos]  # (B, C, n_out, taps)
        out = torch.einsum("bclk,kco->bol", frames, self.bank)
        if self.offset is not None:
            out = out + self.offset[:, None]
        return out


def get_inputs():
    return [torch.rand(3, 12, 90)]


def get_init_inputs():
    return [12, 20, 5, 2, 3]
