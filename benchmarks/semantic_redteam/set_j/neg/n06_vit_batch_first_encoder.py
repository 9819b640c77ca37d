import torch
import torch.nn as nn


class Model(nn.Module):
    """Vision Transformer: unfolded patches, linear embedding, class token, positional embedding, batch-first TransformerEncoder, MLP head."""

    def __init__(self, image_size, patch_size, num_classes, dim, depth, heads, mlp_dim, channels=3, dropout=0.1, emb_dropout=0.1):
        super().__init__()
        num_patches = (image_size // patch_size) ** 2
        patch_dim = channels * patch_size ** 2
        self.patch_size = patch_size
        self.pos_embedding = nn.Parameter(torch.randn(1, num_patches + 1, dim))
        self.patch_to_embedding = nn.Linear(patch_dim, dim)
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim))
        self.dropout = nn.Dropout(emb_dropout)
        self.transformer = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(d_model=dim, nhead=heads, dim_feedforward=mlp_dim, dropout=dropout, batch_first=True),
            num_layers=depth,
        )
        self.to_cls_token = nn.Identity()
        self.mlp_head = nn.Sequential(nn.Linear(dim, mlp_dim), nn.GELU(), nn.Dropout(dropout), nn.Linear(mlp_dim, num_classes))

    def forward(self, img):
        p = self.patch_size
        x = img.unfold(2, p, p).unfold(3, p, p).reshape(img.shape[0], -1, p * p * img.shape[1])
        x = self.patch_to_embedding(x)
        x = torch.cat((self.cls_token.expand(img.shape[0], -1, -1), x), dim=1)
        x = x + self.pos_embedding
        x = self.transformer(self.dropout(x))
        return self.mlp_head(self.to_cls_token(x[:, 0]))


def get_inputs():
    return [torch.rand(3, 3, 32, 32)]


def get_init_inputs():
    return [32, 8, 10, 64, 2, 4, 128, 3, 0.0, 0.0]
