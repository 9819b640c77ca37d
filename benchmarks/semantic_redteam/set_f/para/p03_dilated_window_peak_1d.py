import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Sliding-window maximum along the last axis with explicit gather indices: the sequence is
    padded with -inf, every output position reads `window` taps spaced `spread` apart, and the
    windows advance by `step` positions."""

    def __init__(self, window, step=None, pad=0, spread=1, want_indices=False):
        super().__init__()
        self.window = window
        self.step = window if step is None else step
        self.pad = pad
        self.spread = spread
        self.want_indices = want_indices

    def _tap_index(self, length, device):
        span = (self.window - 1) * self.spread + 1
        n_out = (length + 2 * self.pad - span) // self.step + 1
        starts = torch.arange(n_out, device=device) * self.step
        offsets = torch.arange(self.window, device=device) * self.spread
        return starts[:, None] + offsets[None, :]

    def forward(self, signal):
        idx = self._tap_index(signal.shape[-1], signal.device)
        padded = F.pad(signal, (self.pad, self.pad), value=float("-inf"))
        taps = padded[..., idx]  # (..., n_out, window)
        best, arg = taps.max(dim=-1)
        if self.want_indices:
            rows = torch.arange(idx.shape[0], device=idx.device).expand_as(arg)
            return best, idx[rows, arg] - self.pad
        return best


def get_inputs():
    return [torch.rand(4, 12, 150)]


def get_init_inputs():
    return [8, 1, 4, 3, False]
