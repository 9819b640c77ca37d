import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, c_in, c_sq, c_e1, c_e3):
        super().__init__()
        self.sq_w = nn.Parameter(torch.randn(c_sq, c_in) * 0.1)
        self.sq_b = nn.Parameter(torch.zeros(c_sq))
        self.e1_w = nn.Parameter(torch.randn(c_e1, c_sq) * 0.1)
        self.e1_b = nn.Parameter(torch.zeros(c_e1))
        self.e3 = nn.Conv2d(c_sq, c_e3, 3, padding=1)

    def forward(self, x):
        s = F.relu(torch.einsum("bchw,oc->bohw", x, self.sq_w) + self.sq_b[:, None, None])
        a = F.relu(torch.einsum("bchw,oc->bohw", s, self.e1_w) + self.e1_b[:, None, None])
        return torch.cat((a, F.relu(self.e3(s))), dim=1)


batch_size = 128
num_input_features = 3
num_output_features = 64
height, width = 256, 256
squeeze_channels = 6
expand1x1_channels = 64
expand3x3_channels = 64


def get_inputs():
    return [torch.rand(batch_size, num_input_features, height, width)]


def get_init_inputs():
    return [num_input_features, squeeze_channels, expand1x1_channels, expand3x3_channels]
