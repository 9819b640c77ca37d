import torch
import torch.nn as nn


class Model(nn.Module):
    # 负半轴按斜率缩放，正半轴保持不变
    def __init__(self, slope: float = 0.01):
        super().__init__()
        self.slope = slope

    def forward(self, t):
        return torch.where(t >= 0, t, t * self.slope)


batch_size = 4096
dim = 393216


def get_inputs():
    return [torch.rand(batch_size, dim) * 2 - 1]


def get_init_inputs():
    return []
