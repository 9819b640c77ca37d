import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def _max3x3_same(t):
    """3x3 maximum with stride 1 and one cell of -inf padding, as a max over nine shifted views."""
    p = F.pad(t, (1, 1, 1, 1), value=float("-inf"))
    h, w = t.shape[-2:]
    out = p[..., 0:h, 0:w]
    for i in range(3):
        for j in range(3):
            if i or j:
                out = torch.maximum(out, p[..., i : i + h, j : j + w])
    return out


class Model(nn.Module):
    """Four-way multi-scale block. The three 1x1 maps that read the input directly (direct branch,
    3x3 reducer, 5x5 reducer) are fused into one (in, a+r3+r5) matrix and split afterwards; the
    pooled branch uses a written-out 3x3 maximum and an einsum projection; outputs are concatenated
    along channels."""

    def __init__(self, c_in, n_direct, r3, n3, r5, n5, n_pool):
        super().__init__()
        self.split = (n_direct, r3, r5)
        m = n_direct + r3 + r5
        s = 1.0 / math.sqrt(c_in)
        self.stem_w = nn.Parameter(torch.empty(c_in, m).uniform_(-s, s))
        self.stem_b = nn.Parameter(torch.empty(m).uniform_(-s, s))
        self.mid3 = nn.Conv2d(r3, n3, 3, padding=1)
        self.mid5 = nn.Conv2d(r5, n5, 5, padding=2)
        self.pool_w = nn.Parameter(torch.empty(c_in, n_pool).uniform_(-s, s))
        self.pool_b = nn.Parameter(torch.empty(n_pool).uniform_(-s, s))

    def forward(self, x):
        stem = torch.einsum("bchw,cm->bmhw", x, self.stem_w) + self.stem_b.view(1, -1, 1, 1)
        direct, red3, red5 = torch.split(stem, self.split, dim=1)
        pooled = torch.einsum("bchw,cp->bphw", _max3x3_same(x), self.pool_w) + self.pool_b.view(1, -1, 1, 1)
        return torch.cat([direct, self.mid3(red3), self.mid5(red5), pooled], dim=1)


def get_inputs():
    return [torch.rand(2, 24, 12, 12)]


def get_init_inputs():
    return [24, 8, 6, 10, 4, 6, 5]
