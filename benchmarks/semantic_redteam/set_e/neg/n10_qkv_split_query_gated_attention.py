import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """Causal multi-head self-attention with separate query/key/value maps where each head's
    attention output is gated elementwise by sigmoid(query) before the output projection.

    The gate multiplies every head output by a data-dependent factor in (0, 1) that no weight tie
    can turn into 1 (sigmoid(q) = 1 would need q -> +inf while q also sets the scores).
    """

    def __init__(self, n_embd, n_head, attn_pdrop, resid_pdrop, max_seqlen):
        super().__init__()
        self.nh = n_head
        self.q_map = nn.Linear(n_embd, n_embd)
        self.k_map = nn.Linear(n_embd, n_embd)
        self.v_map = nn.Linear(n_embd, n_embd)
        self.o_map = nn.Linear(n_embd, n_embd)
        self.drop_a = nn.Dropout(attn_pdrop)
        self.drop_o = nn.Dropout(resid_pdrop)
        self.register_buffer("keep", torch.tril(torch.ones(max_seqlen, max_seqlen)).bool())

    def forward(self, x):
        B, T, C = x.shape
        d = C // self.nh
        sh = lambda t: t.view(B, T, self.nh, d).transpose(1, 2)
        q, k, v = sh(self.q_map(x)), sh(self.k_map(x)), sh(self.v_map(x))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d)
        att = att.masked_fill(~self.keep[:T, :T], float("-inf")).softmax(dim=-1)
        y = (self.drop_a(att) @ v) * torch.sigmoid(q)
        return self.drop_o(self.o_map(y.transpose(1, 2).reshape(B, T, C)))


def get_inputs():
    return [torch.rand(2, 10, 32)]


def get_init_inputs():
    return [32, 4, 0.0, 0.0, 16]
