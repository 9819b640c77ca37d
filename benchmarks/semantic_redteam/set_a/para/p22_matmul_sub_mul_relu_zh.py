import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    # 全连接层，随后做仿射变换（先减后乘，已合并），最后截断负值
    def __init__(self, d_in, d_out, shift, gain):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(d_in, d_out)])
        self.gain = gain
        self.offset = shift * gain  # (x - s) * g == x * g - s * g

    def forward(self, t):
        for layer in self.layers:
            t = layer(t)
        return F.threshold(t * self.gain - self.offset, 0.0, 0.0)


batch_size = 1024
in_features = 8192
out_features = 8192
subtract_value = 2.0
multiply_value = 1.5


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, subtract_value, multiply_value]
