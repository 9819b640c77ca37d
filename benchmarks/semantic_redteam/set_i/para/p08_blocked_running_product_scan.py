import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Running (inclusive) product along `dim`, computed as a two-level blocked scan: products
    inside fixed-size blocks, then each block is scaled by the product of all earlier blocks."""

    BLOCK = 256

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.movedim(self.dim, -1)
        n = x.shape[-1]
        nblocks = (n + self.BLOCK - 1) // self.BLOCK
        pad = nblocks * self.BLOCK - n
        if pad:
            x = F.pad(x, (0, pad), value=1.0)
        blocks = x.reshape(*x.shape[:-1], nblocks, self.BLOCK)
        local = torch.cumprod(blocks, dim=-1)
        totals = local[..., -1]
        carry = torch.cumprod(totals, dim=-1)
        carry = torch.cat([torch.ones_like(carry[..., :1]), carry[..., :-1]], dim=-1)  # exclusive prefix
        out = (local * carry.unsqueeze(-1)).reshape(*x.shape[:-1], nblocks * self.BLOCK)[..., :n]
        return out.movedim(-1, self.dim)


batch_size = 32768
input_shape = (32768,)
dim = 1


def get_inputs():
    return [torch.rand(batch_size, *input_shape)]


def get_init_inputs():
    return [dim]
