import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Strided patch projection (im2col + GEMM); the filter bank is stored as a (C*k*k, F) matrix."""

    def __init__(self, num_classes=1000):
        super().__init__()
        self.k, self.s, self.p, self.f = 11, 4, 2, 96
        self.proj = nn.Parameter(torch.randn(3 * 11 * 11, 96) * 0.02)
        self.shift = nn.Parameter(torch.zeros(96))

    def forward(self, img):
        n, _, h, w = img.shape
        ho = (h + 2 * self.p - self.k) // self.s + 1
        wo = (w + 2 * self.p - self.k) // self.s + 1
        cols = F.unfold(img, self.k, padding=self.p, stride=self.s)  # n, C*k*k, L
        out = torch.matmul(cols.transpose(1, 2), self.proj) + self.shift  # n, L, F
        return out.transpose(1, 2).reshape(n, self.f, ho, wo)


batch_size = 256
num_classes = 1000


def get_inputs():
    return [torch.rand(batch_size, 3, 224, 224)]


def get_init_inputs():
    return [num_classes]
