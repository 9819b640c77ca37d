import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class EncoderBlock(nn.Module):
    """Pre-norm transformer block: x + attn(LN(x)), then x + mlp(LN(x))."""

    def __init__(self, dim, heads, hidden):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        B, T, E = x.shape
        hd = E // self.heads
        q, k, v = self.qkv(self.norm1(x)).view(B, T, 3, self.heads, hd).permute(2, 0, 3, 1, 4)
        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(hd), dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(B, T, E))
        return x + self.fc2(F.relu(self.fc1(self.norm2(x))))


class Model(nn.Module):
    def __init__(self, num_classes, embed_dim=512, num_heads=8, num_layers=6, mlp_ratio=4.0, patch_size=4,
                 in_channels=3, image_size=32):
        super().__init__()
        num_patches = (image_size // patch_size) ** 2
        self.conv1 = nn.Conv2d(in_channels, embed_dim, kernel_size=patch_size, stride=patch_size)
        self.linear_proj = nn.Linear(embed_dim * num_patches, embed_dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.blocks = nn.ModuleList(
            [EncoderBlock(embed_dim, num_heads, int(embed_dim * mlp_ratio)) for _ in range(num_layers)]
        )
        self.fc_out = nn.Linear(embed_dim, num_classes)

    def forward(self, x):
        B = x.shape[0]
        x = self.linear_proj(self.conv1(x).flatten(1))
        x = torch.cat([self.cls_token.expand(B, -1, -1), x.unsqueeze(1)], dim=1)
        for blk in self.blocks:
            x = blk(x)
        return self.fc_out(x[:, 0])


batch_size = 4
image_size = 32
embed_dim = 32
in_channels = 3
num_heads = 4
num_classes = 10


def get_inputs():
    return [torch.rand(batch_size, in_channels, image_size, image_size)]


def get_init_inputs():
    return [num_classes, embed_dim, num_heads]
