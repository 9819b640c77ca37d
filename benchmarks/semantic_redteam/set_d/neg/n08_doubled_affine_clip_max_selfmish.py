import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Linear, scale, x+x, clamp, then a hard MAX over features (instead of log-sum-exp), then x*mish(x)."""

    def __init__(self, input_size, hidden_size, scale_factor, clamp_min, clamp_max):
        super().__init__()
        self.matmul = nn.Linear(input_size, hidden_size)
        self.scale_factor = scale_factor
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        x = self.matmul(x) * self.scale_factor
        x = x + x
        x = torch.clamp(x, self.clamp_min, self.clamp_max)
        x = torch.amax(x, dim=1, keepdim=True)
        return x * F.mish(x)


def get_inputs():
    return [torch.rand(8, 20)]


def get_init_inputs():
    return [20, 30, 2.0, -10.0, 10.0]
