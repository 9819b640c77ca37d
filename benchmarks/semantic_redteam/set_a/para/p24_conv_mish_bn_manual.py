import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, eps=1e-5, momentum=0.1):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_channels, in_channels, kernel_size, kernel_size) * 0.05)
        self.bias = nn.Parameter(torch.zeros(out_channels))
        self.gamma = nn.Parameter(torch.ones(out_channels))
        self.beta = nn.Parameter(torch.zeros(out_channels))
        self.eps = eps

    def forward(self, x):
        y = F.conv2d(x, self.weight, self.bias)
        y = y * torch.tanh(torch.log1p(torch.exp(y)))
        var, mean = torch.var_mean(y, dim=(0, 2, 3), keepdim=True, unbiased=False)
        y = (y - mean) / torch.sqrt(var + self.eps)
        return y * self.gamma.view(1, -1, 1, 1) + self.beta.view(1, -1, 1, 1)


batch_size = 32
in_channels = 64
out_channels = 128
height, width = 128, 128
kernel_size = 3


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
