import torch
import torch.nn as nn


class Model(nn.Module):
    """Projection, then each feature group standardized over the batch (batch statistics per group), clamp to [lo, hi]."""

    def __init__(self, in_features, out_features, num_groups, lo, hi):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.norm_w = nn.Parameter(torch.ones(out_features))
        self.norm_b = nn.Parameter(torch.zeros(out_features))
        self.G, self.lo, self.hi = num_groups, lo, hi

    def forward(self, x):
        y = self.gemm(x)
        B, F = y.shape
        g = y.view(B, self.G, F // self.G)
        mu = g.mean(dim=(0, 2), keepdim=True)
        var = ((g - mu) ** 2).mean(dim=(0, 2), keepdim=True)
        g = (g - mu) / torch.sqrt(var + 1e-5)
        return (g.view(B, F) * self.norm_w + self.norm_b).clamp(self.lo, self.hi)


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
