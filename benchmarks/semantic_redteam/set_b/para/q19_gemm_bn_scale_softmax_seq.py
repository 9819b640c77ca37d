import torch
import torch.nn as nn


class BatchStandardize(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.bias = nn.Parameter(torch.zeros(n))
        self.eps = eps

    def forward(self, x):
        mu = x.mean(0)
        var = (x - mu).pow(2).mean(0)
        return (x - mu) / (var + self.eps).sqrt() * self.weight + self.bias


class Scale(nn.Module):
    def __init__(self, shape):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(shape))

    def forward(self, x):
        return x * self.scale


class RowSoftmax(nn.Module):
    def forward(self, x):
        e = torch.exp(x - x.max(dim=1, keepdim=True).values)
        return e / e.sum(dim=1, keepdim=True)


class Model(nn.Module):
    """Linear -> batch standardization -> learnable temperature -> row softmax, as an nn.Sequential."""

    def __init__(self, in_features, out_features, bn_eps=1e-5, bn_momentum=0.1, scale_shape=(1,)):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(in_features, out_features),
            BatchStandardize(out_features, bn_eps),
            Scale(scale_shape),
            RowSoftmax(),
        )

    def forward(self, x):
        return self.body(x)


batch_size = 128
in_features = 8192
out_features = 8192
bn_eps = 1e-5
bn_momentum = 0.1
scale_shape = (1,)


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, bn_eps, bn_momentum, scale_shape]
