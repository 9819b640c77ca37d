import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvNorm(nn.Module):
    """Bias-free convolution followed by batch normalisation."""

    def __init__(self, c_in, c_out, k, stride, pad):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, k, stride=stride, padding=pad, bias=False)
        self.norm = nn.BatchNorm2d(c_out)

    def forward(self, x):
        return self.norm(self.conv(x))


class ResidualUnit(nn.Module):
    """Two 3x3 conv-norm layers with an identity (or 1x1 projected) shortcut."""

    def __init__(self, c_in, c_out, stride):
        super().__init__()
        self.first = ConvNorm(c_in, c_out, 3, stride, 1)
        self.second = ConvNorm(c_out, c_out, 3, 1, 1)
        self.project = ConvNorm(c_in, c_out, 1, stride, 0) if (stride != 1 or c_in != c_out) else None

    def forward(self, x):
        skip = x if self.project is None else self.project(x)
        h = F.relu(self.first(x))
        return F.relu(self.second(h) + skip)


class Model(nn.Module):
    """18-layer residual image classifier: 7x7 stem, 3x3 max pool, four stages of two residual units
    (widths 64-128-256-512, stride 2 from the second stage on), global average pool, linear head."""

    def __init__(self, num_classes=1000):
        super().__init__()
        self.stem = ConvNorm(3, 64, 7, 2, 3)
        units, c = [], 64
        for i, w in enumerate((64, 128, 256, 512)):
            units.append(ResidualUnit(c, w, 1 if i == 0 else 2))
            units.append(ResidualUnit(w, w, 1))
            c = w
        self.units = nn.Sequential(*units)
        self.classifier = nn.Linear(512, num_classes)

    def forward(self, x):
        x = F.relu(self.stem(x))
        x = F.max_pool2d(x, kernel_size=3, stride=2, padding=1)
        x = self.units(x)
        return self.classifier(x.mean(dim=(2, 3)))


batch_size = 2
num_classes = 1000


def get_inputs():
    return [torch.rand(batch_size, 3, 224, 224)]


def get_init_inputs():
    return [num_classes]
