import torch
import torch.nn as nn
import torch.nn.functional as F


def pool2(x):
    n, c, h, w = x.shape
    return x.view(n, c, h // 2, 2, w // 2, 2).amax(dim=(3, 5))


class Model(nn.Module):
    """Classic 5x5-conv digit classifier; explicit parameters, reshape-based 2x2 max pooling, addmm heads."""

    def __init__(self, num_classes):
        super().__init__()
        c1, c2 = nn.Conv2d(1, 6, 5), nn.Conv2d(6, 16, 5)
        f1, f2, f3 = nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, num_classes)
        self.params = nn.ParameterList([c1.weight, c1.bias, c2.weight, c2.bias,
                                        f1.weight, f1.bias, f2.weight, f2.bias, f3.weight, f3.bias])

    def forward(self, x):
        p = self.params
        x = pool2(F.conv2d(x, p[0], p[1]).clamp_min(0))
        x = pool2(F.conv2d(x, p[2], p[3]).clamp_min(0))
        x = x.flatten(1)
        x = torch.addmm(p[5], x, p[4].t()).clamp_min(0)
        x = torch.addmm(p[7], x, p[6].t()).clamp_min(0)
        return torch.addmm(p[9], x, p[8].t())


batch_size = 512
num_classes = 10


def get_inputs():
    return [torch.rand(batch_size, 1, 32, 32)]


def get_init_inputs():
    return [num_classes]
