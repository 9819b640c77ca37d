import torch
import torch.nn as nn


class BatchStatNorm2d(nn.Module):
    """Per-channel normalisation with statistics of the current batch (training-mode batch norm)."""

    def __init__(self, channels, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(dim=(0, 2, 3), keepdim=True)
        var = x.var(dim=(0, 2, 3), unbiased=False, keepdim=True)
        x = (x - mean) / torch.sqrt(var + self.eps)
        return x * self.weight.view(1, -1, 1, 1) + self.bias.view(1, -1, 1, 1)


class MaxPool2x2(nn.Module):
    def forward(self, x):
        B, C, H, W = x.shape
        H2, W2 = H // 2, W // 2
        x = x[:, :, : 2 * H2, : 2 * W2].reshape(B, C, H2, 2, W2, 2)
        return x.amax(dim=(3, 5))


class GroupStatNorm(nn.Module):
    def __init__(self, groups, channels, eps=1e-5):
        super().__init__()
        self.groups = groups
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.eps = eps

    def forward(self, x):
        B, C, H, W = x.shape
        g = x.reshape(B, self.groups, -1)
        mean = g.mean(dim=-1, keepdim=True)
        var = g.var(dim=-1, unbiased=False, keepdim=True)
        g = (g - mean) * torch.rsqrt(var + self.eps)
        return g.reshape(B, C, H, W) * self.weight.view(1, -1, 1, 1) + self.bias.view(1, -1, 1, 1)


class Model(nn.Module):
    """Upsampling block: transposed conv -> batch-stat norm -> tanh -> 2x2 max pool -> group norm."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, groups, num_groups):
        super().__init__()
        self.block = nn.Sequential(
            nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding),
            BatchStatNorm2d(out_channels),
            nn.Tanh(),
            MaxPool2x2(),
            GroupStatNorm(num_groups, out_channels),
        )

    def forward(self, x):
        return self.block(x)


batch_size = 512
in_channels = 64
out_channels = 128
kernel_size = 5
stride = 1
padding = 1
groups = 8
num_groups = 8
height, width = 32, 32


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, groups, num_groups]
