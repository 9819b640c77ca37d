import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class SelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, T, E = x.shape
        hd = E // self.heads
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, hd).permute(2, 0, 3, 1, 4)  # each (B, h, T, hd)
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(hd)
        attn = scores.softmax(dim=-1)
        out = torch.einsum("bhqk,bhkd->bhqd", attn, v)
        return self.proj(out.transpose(1, 2).reshape(B, T, E))


class EncoderBlock(nn.Module):
    """Post-norm transformer encoder block (attention and ReLU MLP, each followed by residual + LayerNorm)."""

    def __init__(self, dim, heads, hidden):
        super().__init__()
        self.attn = SelfAttention(dim, heads)
        self.norm1 = nn.LayerNorm(dim, eps=1e-5)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, dim))
        self.norm2 = nn.LayerNorm(dim, eps=1e-5)

    def forward(self, x):
        x = self.norm1(x + self.attn(x))
        return self.norm2(x + self.mlp(x))


class Model(nn.Module):
    """Image classifier: non-overlapping patch convolution, all patch features flattened and
    projected to a single token, a learned class token prepended, a stack of encoder blocks,
    and a linear head on the class token."""

    def __init__(self, num_classes, embed_dim=512, num_heads=8, num_layers=6, mlp_ratio=4.0, patch_size=4,
                 in_channels=3, image_size=32):
        super().__init__()
        self.patch_size = patch_size
        num_patches = (image_size // patch_size) ** 2
        fan = in_channels * patch_size * patch_size
        b = 1.0 / math.sqrt(fan)
        self.patch_weight = nn.Parameter(torch.empty(embed_dim, in_channels, patch_size, patch_size).uniform_(-b, b))
        self.patch_bias = nn.Parameter(torch.empty(embed_dim).uniform_(-b, b))
        b = 1.0 / math.sqrt(embed_dim * num_patches)
        self.proj_weight = nn.Parameter(torch.empty(embed_dim, embed_dim * num_patches).uniform_(-b, b))
        self.proj_bias = nn.Parameter(torch.empty(embed_dim).uniform_(-b, b))
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.blocks = nn.ModuleList(
            [EncoderBlock(embed_dim, num_heads, int(embed_dim * mlp_ratio)) for _ in range(num_layers)]
        )
        self.head = nn.Linear(embed_dim, num_classes)

    def forward(self, x):
        B = x.shape[0]
        x = F.conv2d(x, self.patch_weight, self.patch_bias, stride=self.patch_size)
        token = torch.addmm(self.proj_bias, x.reshape(B, -1), self.proj_weight.t())
        x = torch.cat([self.cls_token.expand(B, -1, -1), token[:, None, :]], dim=1)
        for blk in self.blocks:
            x = blk(x)
        return self.head(x[:, 0])


batch_size = 10
image_size = 32
embed_dim = 128
in_channels = 3
num_heads = 4
num_classes = 1000


def get_inputs():
    return [torch.rand(batch_size, in_channels, image_size, image_size)]


def get_init_inputs():
    return [num_classes, embed_dim, num_heads]
