import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Affine projection, dropout, rectification and a softmax over the feature axis
    (a distribution over output features for every row)."""

    def __init__(self, in_features, out_features, dropout_p):
        super().__init__()
        bound = 1.0 / math.sqrt(in_features)
        self.weight = nn.Parameter(torch.empty(out_features, in_features).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound))
        self.p = dropout_p

    def forward(self, x):
        h = F.linear(x, self.weight, self.bias)
        h = F.dropout(h, p=self.p, training=self.training)
        h = F.relu(h)
        h = h - h.amax(dim=1, keepdim=True)
        e = h.exp()
        return e / e.sum(dim=1, keepdim=True)


batch_size = 64
in_features = 256
out_features = 32
dropout_p = 0.0


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, dropout_p]
