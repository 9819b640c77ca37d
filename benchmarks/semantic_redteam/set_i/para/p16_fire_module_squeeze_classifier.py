import torch
import torch.nn as nn
import torch.nn.functional as F


class Fire(nn.Module):
    """Squeeze 1x1 -> ReLU, then parallel 1x1 and 3x3 expansions (each ReLU) concatenated on channels."""

    def __init__(self, cin, squeeze, e1, e3):
        super().__init__()
        self.squeeze = nn.Conv2d(cin, squeeze, 1)
        self.e1 = nn.Conv2d(squeeze, e1, 1)
        self.e3 = nn.Conv2d(squeeze, e3, 3, padding=1)

    def forward(self, x):
        s = F.relu(self.squeeze(x))
        return torch.cat([F.relu(self.e1(s)), F.relu(self.e3(s))], dim=1)


class CeilMaxPool(nn.Module):
    def forward(self, x):
        return F.max_pool2d(x, kernel_size=3, stride=2, ceil_mode=True)


class Model(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        cfg = [
            (96, 16, 64, 64), (128, 16, 64, 64), (128, 32, 128, 128), "pool",
            (256, 32, 128, 128), (256, 48, 192, 192), (384, 48, 192, 192), (384, 64, 256, 256), "pool",
            (512, 64, 256, 256),
        ]
        layers = [nn.Conv2d(3, 96, kernel_size=7, stride=2), nn.ReLU(), CeilMaxPool()]
        for c in cfg:
            layers.append(CeilMaxPool() if c == "pool" else Fire(*c))
        self.body = nn.Sequential(*layers)
        self.score = nn.Conv2d(512, num_classes, kernel_size=1)

    def forward(self, x):
        x = self.body(x)
        x = F.relu(self.score(x))
        return x.mean(dim=(2, 3))


batch_size = 64
input_channels = 3
height = 512
width = 512
num_classes = 1000


def get_inputs():
    return [torch.rand(batch_size, input_channels, height, width)]


def get_init_inputs():
    return [num_classes]
