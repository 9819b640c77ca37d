import torch
import torch.nn as nn


class Model(nn.Module):
    """Divide a whole tensor by the square root of its total energy (sum of squared entries),
    computed as one dot product of the flattened tensor with itself."""

    def forward(self, volume):
        flat = volume.reshape(-1)
        energy = torch.dot(flat, flat)
        return volume * torch.rsqrt(energy)


def get_inputs():
    return [torch.rand(3, 8, 20, 24)]


def get_init_inputs():
    return []
