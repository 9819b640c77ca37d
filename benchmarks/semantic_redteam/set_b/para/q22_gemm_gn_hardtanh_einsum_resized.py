import torch
import torch.nn as nn


class Model(nn.Module):
    """Bounded grouped-normalized projection: einsum GEMM, group norm by formula, clamp to [lo, hi]."""

    def __init__(self, in_features, out_features, num_groups, lo, hi):
        super().__init__()
        lin = nn.Linear(in_features, out_features)
        self.weight = nn.Parameter(lin.weight.detach().clone())
        self.bias = nn.Parameter(lin.bias.detach().clone())
        self.norm_w = nn.Parameter(torch.ones(out_features))
        self.norm_b = nn.Parameter(torch.zeros(out_features))
        self.G, self.lo, self.hi = num_groups, lo, hi

    def forward(self, x):
        y = torch.einsum("bi,oi->bo", x, self.weight) + self.bias
        B, F = y.shape
        g = y.view(B, self.G, F // self.G)
        g = (g - g.mean(-1, keepdim=True)) / torch.sqrt(g.var(-1, unbiased=False, keepdim=True) + 1e-5)
        y = g.view(B, F) * self.norm_w + self.norm_b
        return y.clamp(self.lo, self.hi)


batch_size = 512
in_features = 1024
out_features = 2048
num_groups = 16
lo = -2.0
hi = 2.0


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, num_groups, lo, hi]
