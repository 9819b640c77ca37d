import torch
import torch.nn as nn

_SHAPE = 1.6732632423543772848170429916717
_GAIN = 1.0507009873554804934193349852946


def _rectified_and_saturated(t):
    """Split t into its positive part and a bounded negative response e^min(t,0) - 1."""
    return t.clamp_min(0.0), torch.expm1(t.clamp_max(0.0))


class Model(nn.Module):
    """Self-normalising exponential response, evaluated without a branch as a weighted sum of the
    rectified input and the saturating exponential tail (coefficients kept in a small buffer)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("mix", torch.tensor([_GAIN, _GAIN * _SHAPE], dtype=torch.float64))

    def forward(self, x):
        up, down = _rectified_and_saturated(x)
        mix = self.mix.to(x.dtype)
        return mix[0] * up + mix[1] * down


def get_inputs():
    return [torch.randn(24, 300) * 2.0]


def get_init_inputs():
    return []
