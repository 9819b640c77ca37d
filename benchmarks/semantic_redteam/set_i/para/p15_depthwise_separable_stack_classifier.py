import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def batch_norm_train(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=(0, 2, 3), keepdim=True)
    var = x.var(dim=(0, 2, 3), unbiased=False, keepdim=True)
    return (x - mean) * torch.rsqrt(var + eps) * gamma[None, :, None, None] + beta[None, :, None, None]


class ConvNormReLU(nn.Module):
    """Bias-free conv, batch-statistics normalisation, ReLU."""

    def __init__(self, cin, cout, k, stride, padding, groups=1):
        super().__init__()
        self.stride, self.padding, self.groups = stride, padding, groups
        bound = 1.0 / math.sqrt(cin // groups * k * k)
        self.weight = nn.Parameter(torch.empty(cout, cin // groups, k, k).uniform_(-bound, bound))
        self.gamma = nn.Parameter(torch.ones(cout))
        self.beta = nn.Parameter(torch.zeros(cout))

    def forward(self, x):
        x = F.conv2d(x, self.weight, None, self.stride, self.padding, 1, self.groups)
        return F.relu(batch_norm_train(x, self.gamma, self.beta))


class SeparableUnit(nn.Module):
    """3x3 depthwise (possibly strided) followed by a 1x1 pointwise projection."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.depthwise = ConvNormReLU(cin, cin, 3, stride, 1, groups=cin)
        self.pointwise = ConvNormReLU(cin, cout, 1, 1, 0)

    def forward(self, x):
        return self.pointwise(self.depthwise(x))


class Model(nn.Module):
    """Width-multiplied depthwise-separable CNN: a strided stem, thirteen separable units
    (five of them strided), 7x7 average pooling and a linear classifier."""

    PLAN = [(32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1), (256, 512, 2),
            (512, 512, 1), (512, 512, 1), (512, 512, 1), (512, 512, 1), (512, 512, 1), (512, 1024, 2),
            (1024, 1024, 1)]

    def __init__(self, num_classes=1000, input_channels=3, alpha=1.0):
        super().__init__()
        w = lambda c: int(c * alpha)  # noqa: E731
        self.stem = ConvNormReLU(input_channels, w(32), 3, 2, 1)
        self.units = nn.Sequential(*[SeparableUnit(w(a), w(b), s) for a, b, s in self.PLAN])
        self.classifier = nn.Linear(w(1024), num_classes)

    def forward(self, x):
        x = self.units(self.stem(x))
        x = F.avg_pool2d(x, 7)
        return self.classifier(x.flatten(1))


batch_size = 2
input_channels = 3
height = 224
width = 224
num_classes = 100
alpha = 0.5


def get_inputs():
    return [torch.rand(batch_size, input_channels, height, width)]


def get_init_inputs():
    return [num_classes, input_channels, alpha]
