import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear -> channel scale -> batch standardisation (batch statistics), parameters declared norm-first."""

    def __init__(self, in_features, out_features, scale_shape, eps=1e-5, momentum=0.1):
        super().__init__()
        self.norm_shift = nn.Parameter(torch.zeros(out_features))
        self.norm_gain = nn.Parameter(torch.ones(out_features))
        self.channel_scale = nn.Parameter(torch.randn(scale_shape))
        self.proj = nn.Linear(in_features, out_features)
        self.eps = eps

    def forward(self, x):
        h = self.proj(x) * self.channel_scale
        var, mean = torch.var_mean(h, dim=0, unbiased=False)
        return (h - mean) * torch.rsqrt(var + self.eps) * self.norm_gain + self.norm_shift


batch_size = 1024
in_features = 8192
out_features = 8192
scale_shape = (out_features,)


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale_shape]
