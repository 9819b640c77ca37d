import torch
import torch.nn as nn

MAT_DIM = 4096
ROW_TILE = 512


def _upper_product(a, b, tile):
    """Row tiles of a @ b, each computed only from its diagonal column onward."""
    n, m = a.shape[0], b.shape[1]
    out = a.new_zeros(n, m)
    for r0 in range(0, n, tile):
        r1 = min(r0 + tile, n)
        out[r0:r1, r0:] = torch.einsum("ik,kj->ij", a[r0:r1], b[:, r0:])
    return out.triu_()


class Model(nn.Module):
    """Upper part of A @ B computed tile by tile with einsum, skipping column blocks left of the diagonal, then triu_ in place."""

    def __init__(self):
        super().__init__()
        self.tile = ROW_TILE

    def forward(self, A, B):
        return _upper_product(A, B, self.tile)


def get_inputs():
    upper_a = torch.rand(MAT_DIM, MAT_DIM).triu()
    upper_b = torch.rand(MAT_DIM, MAT_DIM).triu()
    return [upper_a, upper_b]


def get_init_inputs():
    return []
