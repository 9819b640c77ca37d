import torch
import torch.nn as nn


class Model(nn.Module):
    """Batch-mean KL(target || pred) written with xlogy."""

    def __init__(self):
        super().__init__()

    def forward(self, pred, target):
        pointwise = torch.special.xlogy(target, target) - target * torch.log(pred)
        return pointwise.sum() / pred.size(0)


batch_size = 1024
n = 4096


def get_inputs():
    s = torch.rand(())
    return [(torch.rand(batch_size, n) * s).softmax(dim=-1), torch.rand(batch_size, n).softmax(dim=-1)]


def get_init_inputs():
    return []
