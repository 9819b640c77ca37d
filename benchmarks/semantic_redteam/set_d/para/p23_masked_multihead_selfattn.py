import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """Multi-head self-attention where each position only attends to itself and earlier positions.
    Query/key/value maps are separate transposed matrices; the 1/sqrt(head_dim) factor lives inside the query map."""

    def __init__(self, n_embd, n_head, attn_pdrop, resid_pdrop, max_seqlen):
        super().__init__()
        assert n_embd % n_head == 0
        self.h = n_head
        bound = 1.0 / math.sqrt(n_embd)
        hs = n_embd // n_head
        mk = lambda *s: nn.Parameter(torch.empty(*s).uniform_(-bound, bound))
        self.wq, self.bq = nn.Parameter(mk(n_embd, n_embd) / math.sqrt(hs)), nn.Parameter(mk(n_embd) / math.sqrt(hs))
        self.wk, self.bk = mk(n_embd, n_embd), mk(n_embd)
        self.wv, self.bv = mk(n_embd, n_embd), mk(n_embd)
        self.wo, self.bo = mk(n_embd, n_embd), mk(n_embd)
        self.drop_a = nn.Dropout(attn_pdrop)
        self.drop_r = nn.Dropout(resid_pdrop)
        self.max_seqlen = max_seqlen

    def forward(self, x):
        B, T, C = x.shape
        split = lambda t: t.reshape(B, T, self.h, C // self.h)
        q = split(x @ self.wq + self.bq)
        k = split(x @ self.wk + self.bk)
        v = split(x @ self.wv + self.bv)
        s = torch.einsum("bqhd,bkhd->bhqk", q, k)
        future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        s = s.masked_fill(future, float("-inf"))
        s = torch.exp(s - s.amax(-1, keepdim=True))
        p = self.drop_a(s / s.sum(-1, keepdim=True))
        y = torch.einsum("bhqk,bkhd->bqhd", p, v).reshape(B, T, C)
        return self.drop_r(y @ self.wo + self.bo)


def get_inputs():
    return [torch.rand(3, 11, 48)]


def get_init_inputs():
    return [48, 6, 0.0, 0.0, 20]
