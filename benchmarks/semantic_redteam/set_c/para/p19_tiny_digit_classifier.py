import torch
import torch.nn as nn
import torch.nn.functional as F


def _pool2(t):
    n, c, h, w = t.shape
    return t.reshape(n, c, h // 2, 2, w // 2, 2).amax(dim=(3, 5))


def _param(*shape, fan):
    b = 1.0 / fan ** 0.5
    return nn.Parameter(torch.empty(*shape).uniform_(-b, b))


class Model(nn.Module):
    """
    Two filter/rectify/downsample stages on 32x32 single-channel images followed
    by three affine layers. Affine weights are kept input-major (transposed).
    """
    def __init__(self, num_classes):
        super().__init__()
        self.k1, self.c1 = _param(6, 1, 5, 5, fan=25), _param(6, fan=25)
        self.k2, self.c2 = _param(16, 6, 5, 5, fan=150), _param(16, fan=150)
        self.w3, self.b3 = _param(400, 120, fan=400), _param(120, fan=400)
        self.w4, self.b4 = _param(120, 84, fan=120), _param(84, fan=120)
        self.w5, self.b5 = _param(84, num_classes, fan=84), _param(num_classes, fan=84)

    def forward(self, x):
        x = _pool2(F.conv2d(x, self.k1, self.c1).clamp(min=0))
        x = _pool2(F.conv2d(x, self.k2, self.c2).clamp(min=0))
        x = x.reshape(x.shape[0], -1)
        x = torch.addmm(self.b3, x, self.w3).clamp(min=0)
        x = torch.addmm(self.b4, x, self.w4).clamp(min=0)
        return torch.addmm(self.b5, x, self.w5)


batch_size = 4096
num_classes = 20


def get_inputs():
    return [torch.rand(batch_size, 1, 32, 32)]


def get_init_inputs():
    return [num_classes]
