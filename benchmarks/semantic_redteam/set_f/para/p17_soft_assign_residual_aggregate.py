import math
import torch
import torch.nn as nn


def _unit(t, dim):
    return t / t.norm(dim=dim, keepdim=True).clamp_min(1e-12)


class Model(nn.Module):
    """Soft-assignment residual aggregation of local descriptors: assignment logits from a codebook,
    standardised per codeword over all descriptors of the batch (with gain/shift), a softmax over
    codewords (only the first `n_words` kept), residual sums against per-word anchors stored as
    (words, dim), then unit-normalisation per word and of the flattened (dim-major) result."""

    def __init__(self, n_words, dim, n_extra):
        super().__init__()
        self.n_words, self.dim = n_words, dim
        s = 1.0 / math.sqrt(dim)
        total = n_words + n_extra
        self.codebook = nn.Parameter(s * torch.randn(dim, total))
        self.gain = nn.Parameter(torch.ones(total))
        self.shift = nn.Parameter(torch.zeros(total))
        self.anchors = nn.Parameter(s * torch.randn(n_words, dim))
        self.eps = 1e-5

    def forward(self, feats):
        b, n, d = feats.shape
        logits = torch.einsum("bnd,dk->bnk", feats, self.codebook).reshape(b * n, -1)
        mu = logits.mean(dim=0)
        var = ((logits - mu) ** 2).mean(dim=0)
        z = (logits - mu) / torch.sqrt(var + self.eps) * self.gain + self.shift
        e = torch.exp(z - z.amax(dim=1, keepdim=True))
        soft = (e / e.sum(dim=1, keepdim=True))[:, : self.n_words].reshape(b, n, self.n_words)
        mass = soft.sum(dim=1)  # (b, K)
        agg = torch.einsum("bnk,bnd->bdk", soft, feats) - mass[:, None, :] * self.anchors.t()[None]
        agg = _unit(agg, 1)
        return _unit(agg.reshape(b, d * self.n_words), 1)


def get_inputs():
    return [torch.rand(3, 10, 512)]


def get_init_inputs():
    return [32, 512, 0]
