import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """Causal attention with ReLU scores (no softmax): qkv projection, triangular masking via where."""

    def __init__(self, n_embd, n_head, max_seqlen):
        super().__init__()
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)   # declared but unused, as in the reference design
        self.n_head = n_head
        self.register_buffer("causal", torch.ones(max_seqlen, max_seqlen, dtype=torch.bool).tril())

    def forward(self, x):
        B, T, C = x.shape
        hd = C // self.n_head
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, hd).permute(2, 0, 3, 1, 4)
        att = torch.einsum("bhtd,bhsd->bhts", q, k) * (1.0 / math.sqrt(hd))
        att = torch.where(self.causal[:T, :T], att, torch.zeros_like(att)).relu()
        y = torch.einsum("bhts,bhsd->bhtd", att, v)
        return y.transpose(1, 2).reshape(B, T, C)


batch_size = 4
max_seqlen = 512
n_embd = 768
n_head = 12


def get_inputs():
    return [torch.rand(batch_size, max_seqlen, n_embd)]


def get_init_inputs():
    return [n_embd, n_head, max_seqlen]
