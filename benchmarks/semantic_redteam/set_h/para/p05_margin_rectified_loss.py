import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Average margin violation for +-1 labels: relu(1 - y * s) averaged over every element of the
    broadcast product."""

    def __init__(self):
        super().__init__()

    def forward(self, scores, labels):
        violation = F.relu(1.0 - labels * scores)
        return violation.sum() / violation.numel()


batch_size = 32768
input_shape = (32768,)


def get_inputs():
    return [torch.rand(batch_size, *input_shape), torch.randint(0, 2, (batch_size,)).float() * 2 - 1]


def get_init_inputs():
    return []
