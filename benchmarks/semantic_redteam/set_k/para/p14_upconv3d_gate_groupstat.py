import torch
import torch.nn as nn
import torch.nn.functional as F


def swish(t):
    return t * torch.sigmoid(t)


def hard_swish(t):
    return t * F.relu6(t + 3.0) / 6.0


class GroupStandardize(nn.Module):
    def __init__(self, groups, channels, eps):
        super().__init__()
        self.groups, self.eps = groups, eps
        self.g = nn.Parameter(torch.ones(channels))
        self.h = nn.Parameter(torch.zeros(channels))

    def forward(self, t):
        n, c = t.shape[:2]
        tg = t.reshape(n, self.groups, -1)
        var, mu = torch.var_mean(tg, dim=-1, keepdim=True, unbiased=False)
        tg = (tg - mu) / torch.sqrt(var + self.eps)
        t = tg.reshape(t.shape)
        view = (1, c) + (1,) * (t.dim() - 2)
        return t * self.g.view(view) + self.h.view(view)


class Model(nn.Module):
    """Strided 3D transposed convolution, swish, group standardisation, hard-swish."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, groups, eps, bias=True):
        super().__init__()
        self.stride, self.padding = stride, padding
        bound = 1.0 / (out_channels * kernel_size ** 3) ** 0.5
        self.up_w = nn.Parameter(torch.empty(in_channels, out_channels, kernel_size, kernel_size, kernel_size)
                                 .uniform_(-bound, bound))
        self.up_b = nn.Parameter(torch.empty(out_channels).uniform_(-bound, bound)) if bias else None
        self.gn = GroupStandardize(groups, out_channels, eps)

    def forward(self, x):
        y = F.conv_transpose3d(x, self.up_w, self.up_b, stride=self.stride, padding=self.padding)
        return hard_swish(self.gn(swish(y)))


batch_size = 128
in_channels = 3
out_channels = 16
depth, height, width = 16, 32, 32
kernel_size = 3
stride = 2
padding = 1
groups = 4
eps = 1e-5


def get_inputs():
    return [torch.rand(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, groups, eps]
