import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Exclusive running sums taken from the end of the axis (sum of all strictly later elements)."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        t = x.movedim(self.dim, -1).flip(-1)
        t = F.pad(t[..., :-1], (1, 0)).cumsum(-1).flip(-1)
        return t.movedim(-1, self.dim)


batch_size = 512
input_shape = (2048,)
dim = 1


def get_inputs():
    return [torch.rand(batch_size, *input_shape)]


def get_init_inputs():
    return [dim]
