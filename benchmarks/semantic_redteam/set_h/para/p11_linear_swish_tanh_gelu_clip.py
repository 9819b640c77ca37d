import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def _exact_gelu(t):
    return 0.5 * t * (1.0 + torch.erf(t * (1.0 / math.sqrt(2.0))))


def _activation_chain(t):
    t = F.silu(t)
    t = torch.tanh(t)
    t = _exact_gelu(t)
    return t.clamp(min=-1.0, max=1.0)


class Model(nn.Module):
    """Linear layer plus a learned per-feature offset, followed by a chain of pointwise activations
    (swish, tanh, exact GELU, hard clip to [-1, 1])."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features)
        self.offset = nn.Parameter(torch.randn(out_features))

    def forward(self, x):
        return _activation_chain(self.proj(x) + self.offset)


batch_size = 64
in_features = 512
out_features = 384


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
