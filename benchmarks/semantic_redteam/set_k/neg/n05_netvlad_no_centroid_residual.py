import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Soft-assignment aggregation with ghost clusters, but without subtracting the assigned centroids."""

    def __init__(self, cluster_size, feature_size, ghost_clusters):
        super().__init__()
        self.feature_size = feature_size
        self.cluster_size = cluster_size
        init_sc = 1 / feature_size ** 0.5
        clusters = cluster_size + ghost_clusters
        self.clusters = nn.Parameter(init_sc * torch.randn(feature_size, clusters))
        self.batch_norm = nn.BatchNorm1d(clusters)
        self.clusters2 = nn.Parameter(init_sc * torch.randn(1, feature_size, cluster_size))

    def forward(self, x, mask=None):
        n = x.size(1)
        flat = x.reshape(-1, self.feature_size)
        a = F.softmax(self.batch_norm(flat @ self.clusters), dim=1)[:, : self.cluster_size]
        a = a.reshape(-1, n, self.cluster_size)
        vlad = torch.matmul(a.transpose(1, 2), x).transpose(1, 2)  # B x D x K
        vlad = F.normalize(vlad)
        vlad = vlad.reshape(-1, self.cluster_size * self.feature_size)
        return F.normalize(vlad)


batch_size = 16
num_features = 50
num_clusters = 8
feature_size = 64
ghost_clusters = 4


def get_inputs():
    return [torch.rand(batch_size, num_features, feature_size)]


def get_init_inputs():
    return [num_clusters, feature_size, ghost_clusters]
