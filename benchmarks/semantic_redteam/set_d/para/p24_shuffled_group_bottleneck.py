import torch
import torch.nn as nn
import torch.nn.functional as F


def _bn_train(t, g, b, eps=1e-5):
    var, mu = torch.var_mean(t, dim=(0, 2, 3), unbiased=False, keepdim=True)
    return (t - mu) * torch.rsqrt(var + eps) * g.view(1, -1, 1, 1) + b.view(1, -1, 1, 1)


class Model(nn.Module):
    """Grouped 1x1 squeeze, depthwise 3x3, grouped 1x1 expand, with an interleaving channel permutation.
    The permutation is applied right after the squeeze; the depthwise kernel and its norm parameters are stored
    in the already-permuted channel order."""

    def __init__(self, in_channels, out_channels, groups=3):
        super().__init__()
        assert out_channels % 4 == 0
        mid = out_channels // 4
        self.groups = groups
        cpg = mid // groups
        self.register_buffer("order", torch.tensor([(n % groups) * cpg + n // groups for n in range(mid)]))
        self.sq = nn.Parameter(torch.randn(mid, in_channels // groups, 1, 1) * (groups / in_channels) ** 0.5)
        self.dw = nn.Parameter(torch.randn(mid, 1, 3, 3) / 3.0)
        self.ex = nn.Parameter(torch.randn(out_channels, mid // groups, 1, 1) * (groups / mid) ** 0.5)
        self.n1 = nn.ParameterList([nn.Parameter(torch.ones(mid)), nn.Parameter(torch.zeros(mid))])
        self.n2 = nn.ParameterList([nn.Parameter(torch.ones(mid)), nn.Parameter(torch.zeros(mid))])
        self.n3 = nn.ParameterList([nn.Parameter(torch.ones(out_channels)), nn.Parameter(torch.zeros(out_channels))])
        self.project = in_channels != out_channels
        if self.project:
            self.sk = nn.Parameter(torch.randn(out_channels, in_channels, 1, 1) * (1.0 / in_channels) ** 0.5)
            self.nsk = nn.ParameterList([nn.Parameter(torch.ones(out_channels)), nn.Parameter(torch.zeros(out_channels))])

    def forward(self, x):
        h = F.relu(_bn_train(F.conv2d(x, self.sq, groups=self.groups), *self.n1))
        h = h.index_select(1, self.order)
        h = _bn_train(F.conv2d(h, self.dw, padding=1, groups=h.shape[1]), *self.n2)
        h = F.relu(_bn_train(F.conv2d(h, self.ex, groups=self.groups), *self.n3))
        skip = _bn_train(F.conv2d(x, self.sk), *self.nsk) if self.project else x
        return h + skip


def get_inputs():
    return [torch.rand(2, 240, 5, 5)]


def get_init_inputs():
    return [240, 480, 3]
