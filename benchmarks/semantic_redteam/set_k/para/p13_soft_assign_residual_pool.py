import torch
import torch.nn as nn


def _unit(t, dim, eps=1e-12):
    n = torch.sqrt((t * t).sum(dim=dim, keepdim=True))
    return t / n.clamp_min(eps)


class Model(nn.Module):
    """Soft-assignment residual aggregation with extra (discarded) assignment slots."""

    def __init__(self, cluster_size, feature_size, ghost_clusters):
        super().__init__()
        self.K = cluster_size
        self.D = feature_size
        total = cluster_size + ghost_clusters
        s = 1.0 / feature_size ** 0.5
        self.assign_w = nn.Parameter(s * torch.randn(total, feature_size))   # (K+G, D)
        self.bn_gain = nn.Parameter(torch.ones(total))
        self.bn_bias = nn.Parameter(torch.zeros(total))
        self.centroids = nn.Parameter(s * torch.randn(cluster_size, feature_size))  # (K, D)
        self.eps = 1e-5

    def forward(self, x, mask=None):
        b, n, d = x.shape
        flat = x.reshape(b * n, d)
        logits = torch.einsum("md,cd->mc", flat, self.assign_w)
        var, mean = torch.var_mean(logits, dim=0, unbiased=False)
        logits = (logits - mean) / torch.sqrt(var + self.eps) * self.bn_gain + self.bn_bias
        logits = logits - logits.amax(dim=1, keepdim=True)
        e = torch.exp(logits)
        soft = (e / e.sum(dim=1, keepdim=True))[:, : self.K].reshape(b, n, self.K)
        mass = soft.sum(dim=1)  # b, K
        agg = torch.einsum("bnk,bnd->bkd", soft, x) - mass.unsqueeze(-1) * self.centroids
        agg = _unit(agg, dim=2)
        out = agg.transpose(1, 2).reshape(b, d * self.K)
        return _unit(out, dim=1)


batch_size = 16
num_features = 50
num_clusters = 8
feature_size = 64
ghost_clusters = 4


def get_inputs():
    return [torch.rand(batch_size, num_features, feature_size)]


def get_init_inputs():
    return [num_clusters, feature_size, ghost_clusters]
