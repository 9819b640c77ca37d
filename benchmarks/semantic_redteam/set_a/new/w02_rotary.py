import torch
import torch.nn as nn


class Model(nn.Module):
    """Apply rotary position embeddings to queries and keys, then return their scaled dot products."""

    def __init__(self, head_dim, base=10000.0):
        super().__init__()
        inv = 1.0 / base ** (torch.arange(0, head_dim, 2).float() / head_dim)
        self.register_buffer("inv_freq", inv)

    def rotate(self, x):
        t = torch.arange(x.shape[-2], dtype=x.dtype, device=x.device)
        ang = torch.outer(t, self.inv_freq)
        cos, sin = ang.cos(), ang.sin()
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)

    def forward(self, q, k):
        q, k = self.rotate(q), self.rotate(k)
        return q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5


batch_size, heads, seq_len, head_dim = 4, 16, 512, 64


def get_inputs():
    s = (batch_size, heads, seq_len, head_dim)
    return [torch.randn(s), torch.randn(s)]


def get_init_inputs():
    return [head_dim]
