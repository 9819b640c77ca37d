import math

import torch
import torch.nn as nn


def _layer_norm(t, g, b, eps=1e-5):
    mu = t.mean(-1, keepdim=True)
    var = (t - mu).pow(2).mean(-1, keepdim=True)
    return (t - mu) / torch.sqrt(var + eps) * g + b


def _param(*shape, scale):
    return nn.Parameter(torch.empty(*shape).uniform_(-scale, scale))


class EncoderBlock(nn.Module):
    """Post-norm self-attention block over the first axis of a (S, N, D) tensor, ReLU feed-forward."""

    def __init__(self, dim, heads, hidden):
        super().__init__()
        self.heads = heads
        r, rh = 1.0 / math.sqrt(dim), 1.0 / math.sqrt(hidden)
        self.qkv_w, self.qkv_b = _param(dim, 3 * dim, scale=r), nn.Parameter(torch.zeros(3 * dim))
        self.o_w, self.o_b = _param(dim, dim, scale=r), nn.Parameter(torch.zeros(dim))
        self.up_w, self.up_b = _param(dim, hidden, scale=r), _param(hidden, scale=r)
        self.down_w, self.down_b = _param(hidden, dim, scale=rh), _param(dim, scale=rh)
        self.g1, self.b1 = nn.Parameter(torch.ones(dim)), nn.Parameter(torch.zeros(dim))
        self.g2, self.b2 = nn.Parameter(torch.ones(dim)), nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        s, n, d = x.shape
        h = self.heads
        q, k, v = (torch.einsum("snd,de->sne", x, self.qkv_w) + self.qkv_b).split(d, dim=-1)
        q, k, v = (t.reshape(s, n, h, d // h) for t in (q, k, v))
        att = torch.einsum("snhc,tnhc->nhst", q, k).mul(1.0 / math.sqrt(d // h)).softmax(-1)
        ctx = torch.einsum("nhst,tnhc->snhc", att, v).reshape(s, n, d)
        x = _layer_norm(x + ctx @ self.o_w + self.o_b, self.g1, self.b1)
        ff = torch.relu(x @ self.up_w + self.up_b) @ self.down_w + self.down_b
        return _layer_norm(x + ff, self.g2, self.b2)


class Model(nn.Module):
    """ViT with patches cut by reshape/permute, linears as matmul/einsum with (in, out) weights, hand-written post-norm encoder layers that attend over axis 0 (sequence-first layout, as in the reference) and an erf-GELU head."""

    def __init__(self, image_size, patch_size, num_classes, dim, depth, heads, mlp_dim, channels=3, dropout=0.1, emb_dropout=0.1):
        super().__init__()
        n_patch = (image_size // patch_size) ** 2
        patch_dim = channels * patch_size ** 2
        self.p = patch_size
        self.pos = nn.Parameter(torch.randn(1, n_patch + 1, dim))
        self.cls = nn.Parameter(torch.randn(1, 1, dim))
        self.embed_w, self.embed_b = _param(patch_dim, dim, scale=patch_dim ** -0.5), _param(dim, scale=patch_dim ** -0.5)
        self.blocks = nn.ModuleList(EncoderBlock(dim, heads, mlp_dim) for _ in range(depth))
        self.head1_w, self.head1_b = _param(dim, mlp_dim, scale=dim ** -0.5), _param(mlp_dim, scale=dim ** -0.5)
        self.head2_w, self.head2_b = _param(mlp_dim, num_classes, scale=mlp_dim ** -0.5), _param(num_classes, scale=mlp_dim ** -0.5)

    def forward(self, img):
        bsz, c, hh, ww = img.shape
        p = self.p
        t = img.reshape(bsz, c, hh // p, p, ww // p, p).permute(0, 1, 2, 4, 3, 5).reshape(bsz, -1, p * p * c)
        t = t @ self.embed_w + self.embed_b
        t = torch.cat([self.cls.expand(bsz, -1, -1), t], dim=1) + self.pos
        for blk in self.blocks:
            t = blk(t)
        z = t[:, 0] @ self.head1_w + self.head1_b
        z = 0.5 * z * (1.0 + torch.erf(z / math.sqrt(2.0)))
        return z @ self.head2_w + self.head2_b


def get_inputs():
    return [torch.rand(3, 3, 32, 32)]


def get_init_inputs():
    return [32, 8, 10, 64, 2, 4, 128, 3, 0.0, 0.0]
