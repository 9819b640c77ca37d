import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvStage(nn.Module):
    """Two (3x3 conv -> batch norm -> ReLU) layers followed by a 2x2 block maximum."""

    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv_a = nn.Conv2d(c_in, c_out, 3, padding=1)
        self.norm_a = nn.BatchNorm2d(c_out)
        self.conv_b = nn.Conv2d(c_out, c_out, 3, padding=1)
        self.norm_b = nn.BatchNorm2d(c_out)

    @staticmethod
    def _pool2(t):
        n, c, h, w = t.shape
        t = t[:, :, : h // 2 * 2, : w // 2 * 2].reshape(n, c, h // 2, 2, w // 2, 2)
        return t.amax(dim=(3, 5))

    def forward(self, x):
        x = F.relu(self.norm_a(self.conv_a(x)))
        x = F.relu(self.norm_b(self.conv_b(x)))
        return self._pool2(x)


class Model(nn.Module):
    """Plain stacked-stage image classifier: stages of widths `block_widths`, global average pooling,
    linear head with explicit weights."""

    def __init__(self, input_channels, stages, block_widths, output_classes):
        super().__init__()
        chans = [input_channels] + list(block_widths[:stages])
        self.stages = nn.ModuleList([ConvStage(chans[i], chans[i + 1]) for i in range(stages)])
        bound = 1.0 / math.sqrt(block_widths[-1])
        self.head_w = nn.Parameter(torch.empty(output_classes, block_widths[-1]).uniform_(-bound, bound))
        self.head_b = nn.Parameter(torch.empty(output_classes).uniform_(-bound, bound))

    def forward(self, x):
        for stage in self.stages:
            x = stage(x)
        pooled = x.flatten(2).sum(-1) / (x.shape[2] * x.shape[3])
        return pooled @ self.head_w.t() + self.head_b


batch_size = 8
input_channels = 3
image_height, image_width = 224, 224
stages = 3
block_widths = [64, 128, 256]
output_classes = 10


def get_inputs():
    return [torch.rand(batch_size, input_channels, image_height, image_width)]


def get_init_inputs():
    return [input_channels, stages, block_widths, output_classes]
