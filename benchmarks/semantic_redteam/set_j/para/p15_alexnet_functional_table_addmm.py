import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# (c_in, c_out, kernel, stride, pad, max-pool 3/2 afterwards)
FEATURE_TABLE = [
    (3, 96, 11, 4, 2, True),
    (96, 256, 5, 1, 2, True),
    (256, 384, 3, 1, 1, False),
    (384, 384, 3, 1, 1, False),
    (384, 256, 3, 1, 1, True),
]
FLAT = 256 * 6 * 6
HIDDEN = 4096


def _uniform(shape, fan_in):
    bound = 1.0 / math.sqrt(fan_in)
    return nn.Parameter(torch.empty(*shape).uniform_(-bound, bound))


class Model(nn.Module):
    """AlexNet from a layer table: functional conv2d/max_pool2d, ReLU as clamp_min, classifier as addmm with (in, out) transposed weights, p=0 dropouts dropped."""

    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv_w, self.conv_b = nn.ParameterList(), nn.ParameterList()
        for ci, co, k, _, _, _ in FEATURE_TABLE:
            self.conv_w.append(_uniform((co, ci, k, k), ci * k * k))
            self.conv_b.append(_uniform((co,), ci * k * k))
        widths = [FLAT, HIDDEN, HIDDEN, num_classes]
        self.fc_wt, self.fc_b = nn.ParameterList(), nn.ParameterList()
        for a, b in zip(widths[:-1], widths[1:]):
            self.fc_wt.append(_uniform((a, b), a))
            self.fc_b.append(_uniform((b,), a))

    def forward(self, x):
        for (_, _, _, s, p, pool), w, b in zip(FEATURE_TABLE, self.conv_w, self.conv_b):
            x = F.conv2d(x, w, b, stride=s, padding=p).clamp_min(0.0)
            if pool:
                x = F.max_pool2d(x, 3, 2)
        x = x.reshape(x.shape[0], -1)
        last = len(self.fc_wt) - 1
        for i, (wt, b) in enumerate(zip(self.fc_wt, self.fc_b)):
            x = torch.addmm(b, x, wt)
            if i < last:
                x = x.clamp_min(0.0)
        return x


N_BATCH = 1024
CLASSES = 1000


def get_inputs():
    return [torch.rand(N_BATCH, 3, 224, 224)]


def get_init_inputs():
    return [CLASSES]
