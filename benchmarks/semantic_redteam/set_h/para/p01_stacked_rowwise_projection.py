import torch
import torch.nn as nn


def _project_rows(stack, proj):
    """Flattens the leading (batch, row) axes, multiplies by the shared projection and restores them."""
    n, m, k = stack.shape
    flat = stack.reshape(n * m, k)
    out = torch.mm(flat, proj)
    return out.view(n, m, proj.shape[1])


class Model(nn.Module):
    """Applies one shared right-hand matrix to every matrix of a batch: out[n] = stack[n] @ proj.

    The batch and row axes are merged so the whole product runs as a single 2-D GEMM."""

    def __init__(self):
        super().__init__()

    def forward(self, stack, proj):
        return _project_rows(stack, proj)


batch = 4
rows = 256
inner = 512
cols = 384


def get_inputs():
    stack = torch.rand(batch, rows, inner)
    proj = torch.rand(inner, cols)
    return [stack, proj]


def get_init_inputs():
    return []
