import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Dense volumetric stencil: every output voxel is a learned linear map of the
    cube of input voxels around it. Taps are stored as (kd, kh, kw, c_in, c_out).
    """
    def __init__(self, c_in: int, c_out: int, cube: int):
        super().__init__()
        self.cube = cube
        fan_in = c_in * cube ** 3
        self.taps = nn.Parameter(torch.randn(cube, cube, cube, c_in, c_out) / fan_in ** 0.5)

    def forward(self, vol: torch.Tensor) -> torch.Tensor:
        k = self.cube
        patches = vol.unfold(2, k, 1).unfold(3, k, 1).unfold(4, k, 1)
        # patches: (n, c_in, d', w', h', k, k, k)
        return torch.einsum("ncxyzijk,ijkco->noxyz", patches, self.taps)


n_vol = 16
c_in = 3
c_out = 64
cube = 3
depth = 64
width = 64
height = 64


def get_inputs():
    return [torch.rand(n_vol, c_in, depth, width, height)]


def get_init_inputs():
    return [c_in, c_out, cube]
