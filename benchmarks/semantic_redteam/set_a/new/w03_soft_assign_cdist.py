import torch
import torch.nn as nn


class Model(nn.Module):
    """Soft k-means assignment: softmin of squared distances to learned centroids, then the weighted centroid."""

    def __init__(self, dim, n_centroids, temperature=0.5):
        super().__init__()
        self.centroids = nn.Parameter(torch.randn(n_centroids, dim))
        self.temperature = temperature

    def forward(self, x):
        d2 = torch.cdist(x, self.centroids).pow(2)
        a = torch.softmax(-d2 / self.temperature, dim=-1)
        return a @ self.centroids


batch_size, dim, n_centroids = 4096, 128, 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim, n_centroids]
