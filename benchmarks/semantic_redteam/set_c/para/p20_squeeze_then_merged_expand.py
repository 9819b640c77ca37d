import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """
    Channel squeeze (pointwise, via einsum) followed by a single 3x3 expansion
    whose first block of output channels only uses the centre tap (equivalent
    to a 1x1 branch) and whose second block is a full 3x3 branch.
    """
    def __init__(self, in_channels, squeeze_channels, expand1x1_channels, expand3x3_channels):
        super().__init__()
        def u(*shape, fan):
            b = 1.0 / fan ** 0.5
            return nn.Parameter(torch.empty(*shape).uniform_(-b, b))
        self.sq_w = u(squeeze_channels, in_channels, fan=in_channels)
        self.sq_b = u(squeeze_channels, fan=in_channels)
        self.pt_w = u(expand1x1_channels, squeeze_channels, fan=squeeze_channels)
        self.pt_b = u(expand1x1_channels, fan=squeeze_channels)
        self.sp_w = u(expand3x3_channels, squeeze_channels, 3, 3, fan=9 * squeeze_channels)
        self.sp_b = u(expand3x3_channels, fan=9 * squeeze_channels)

    def _merged_kernel(self):
        e1, s = self.pt_w.shape
        centre = self.pt_w.new_zeros(e1, s, 3, 3)
        centre[:, :, 1, 1] = self.pt_w
        return torch.cat([centre, self.sp_w], dim=0), torch.cat([self.pt_b, self.sp_b])

    def forward(self, x):
        s = torch.einsum("nchw,sc->nshw", x, self.sq_w) + self.sq_b.view(1, -1, 1, 1)
        s = F.relu(s)
        k, b = self._merged_kernel()
        return F.relu(F.conv2d(s, k, b, padding=1))


batch_size = 8
num_input_features = 16
height, width = 48, 48
squeeze_channels = 8
expand1x1_channels = 32
expand3x3_channels = 24


def get_inputs():
    return [torch.rand(batch_size, num_input_features, height, width)]


def get_init_inputs():
    return [num_input_features, squeeze_channels, expand1x1_channels, expand3x3_channels]
