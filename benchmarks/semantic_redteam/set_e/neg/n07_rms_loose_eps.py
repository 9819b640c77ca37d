import torch
import torch.nn as nn


class Model(nn.Module):
    """Channel RMS normalisation with a fixed stabiliser eps = 1e-3 (not configurable).

    For activations in [0, 0.5) the channel mean square is ~1/12, so sqrt(ms + 1e-3) is ~0.6% above
    sqrt(ms + 1e-5): a relative change of ~5e-3 in the output, varying with ms per position. No
    parameters, so no tie applies.
    """

    def __init__(self, num_features: int):
        super().__init__()
        self.num_features = num_features

    def forward(self, x):
        ms = (x * x).mean(dim=1, keepdim=True)
        return x * torch.rsqrt(ms + 1e-3)


def get_inputs():
    return [torch.rand(4, 16, 6, 6) * 0.5]


def get_init_inputs():
    return [16]
