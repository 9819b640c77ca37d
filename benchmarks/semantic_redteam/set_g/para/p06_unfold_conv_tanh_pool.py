import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Patch extraction + matrix product (a valid convolution) with the first subtracted constant merged
    into the bias, tanh, the second constant subtracted, and non-overlapping window averaging."""

    def __init__(self, cin, cout, k, c1, c2, p):
        super().__init__()
        r = 1.0 / math.sqrt(cin * k * k)
        self.kern = nn.Parameter(torch.empty(cout, cin * k * k).uniform_(-r, r))
        self.b = nn.Parameter(torch.empty(cout).uniform_(-r, r) - c1)
        self.k, self.c2, self.p = k, c2, p

    def forward(self, x):
        n, _, h, w = x.shape
        ho, wo = h - self.k + 1, w - self.k + 1
        cols = F.unfold(x, self.k)                      # (n, cin*k*k, L)
        y = torch.matmul(self.kern, cols) + self.b[:, None]
        y = torch.tanh(y).view(n, -1, ho, wo) - self.c2
        p = self.p
        y = y[:, :, : ho // p * p, : wo // p * p]
        y = y.reshape(n, y.shape[1], ho // p, p, wo // p, p)
        return y.mean(dim=(3, 5))


def get_inputs():
    return [torch.rand(3, 7, 19, 19)]


def get_init_inputs():
    return [7, 12, 3, 0.5, 0.2, 2]
