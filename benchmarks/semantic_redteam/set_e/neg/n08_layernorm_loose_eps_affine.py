import torch
import torch.nn as nn


class Model(nn.Module):
    """Layer normalisation over the trailing dims with eps = 1e-3 and elementwise affine parameters.

    The eps changes each sample's scale by sqrt((v + 1e-5) / (v + 1e-3)), which depends on the
    sample variance v; the inputs come at two amplitudes (v ~ 1/12 and ~1/3), so a rescaled gain
    (shared by all samples) cannot absorb the change: the residual stays > 1e-3 relative.
    """

    def __init__(self, normalized_shape):
        super().__init__()
        self.shape = tuple(normalized_shape)
        self.weight = nn.Parameter(torch.ones(self.shape))
        self.bias = nn.Parameter(torch.zeros(self.shape))

    def forward(self, x):
        dims = tuple(range(x.dim() - len(self.shape), x.dim()))
        mu = x.mean(dim=dims, keepdim=True)
        var = x.var(dim=dims, unbiased=False, keepdim=True)
        return (x - mu) / torch.sqrt(var + 1e-3) * self.weight + self.bias


def get_inputs():
    return [torch.rand(4, 6, 5, 5) * torch.tensor([1.0, 2.0, 1.0, 2.0]).view(4, 1, 1, 1)]


def get_init_inputs():
    return [(6, 5, 5)]
