import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Mixes channels over a sliding window along the sequence axis. The filter
    bank is stored as a single flat matrix of shape (c_out, c_in * taps).
    """
    def __init__(self, c_in: int, c_out: int, taps: int):
        super().__init__()
        self.c_in = c_in
        self.c_out = c_out
        self.taps = taps
        self.filters = nn.Parameter(torch.randn(c_out, c_in * taps) / (c_in * taps) ** 0.5)

    def forward(self, seq: torch.Tensor) -> torch.Tensor:
        # seq: (n, c_in, t) -> windows: (n, c_in, t - taps + 1, taps)
        windows = seq.unfold(-1, self.taps, 1)
        bank = self.filters.view(self.c_out, self.c_in, self.taps)
        return torch.einsum("nctk,ock->not", windows, bank)


n_items = 16
c_in = 32
c_out = 48
taps = 5
steps = 4096


def get_inputs():
    return [torch.rand(n_items, c_in, steps)]


def get_init_inputs():
    return [c_in, c_out, taps]
