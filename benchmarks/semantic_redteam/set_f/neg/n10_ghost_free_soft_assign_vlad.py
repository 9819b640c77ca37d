import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Soft-assignment residual aggregation with extra (ghost) codewords: logits for all codewords are
    batch-standardised, the ghost columns are discarded and the softmax runs over the real
    codewords, residuals against anchors are summed and normalised twice."""

    def __init__(self, n_words, dim, n_ghost):
        super().__init__()
        self.K, self.D = n_words, dim
        s = 1.0 / math.sqrt(dim)
        self.clusters = nn.Parameter(s * torch.randn(dim, n_words + n_ghost))
        self.bn = nn.BatchNorm1d(n_words + n_ghost)
        self.anchors = nn.Parameter(s * torch.randn(1, dim, n_words))

    def forward(self, x):
        b, n, d = x.shape
        a = self.bn(x.reshape(-1, d) @ self.clusters)[:, : self.K]
        a = F.softmax(a, dim=1).reshape(b, n, self.K)
        v = torch.einsum("bnk,bnd->bdk", a, x) - a.sum(dim=1, keepdim=True) * self.anchors
        v = F.normalize(v, dim=1).reshape(b, d * self.K)
        return F.normalize(v, dim=1)


def get_inputs():
    return [torch.rand(3, 12, 16)]


def get_init_inputs():
    return [8, 16, 4]
