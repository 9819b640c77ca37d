import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n_in, n_out, offset_shape):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_out, n_in) * n_in ** -0.5)
        self.offset = nn.Parameter(torch.randn(offset_shape))

    def forward(self, inp):
        return inp.mm(self.weight.t()).add(self.offset).clamp_min(0.0)


batch_size = 512
in_features = 4096
out_features = 2048
bias_shape = (out_features,)


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, bias_shape]
