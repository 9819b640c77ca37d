import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Pre-norm SwiGLU feed-forward block with residual."""

    def __init__(self, d_model, d_hidden, eps=1e-6):
        super().__init__()
        self.g = nn.Parameter(torch.ones(d_model))
        self.w_gate = nn.Linear(d_model, d_hidden, bias=False)
        self.w_up = nn.Linear(d_model, d_hidden, bias=False)
        self.w_down = nn.Linear(d_hidden, d_model, bias=False)
        self.eps = eps

    def forward(self, x):
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.g
        return x + self.w_down(F.silu(self.w_gate(h)) * self.w_up(h))


batch_size, seq_len, d_model, d_hidden = 8, 256, 1024, 2816


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model)]


def get_init_inputs():
    return [d_model, d_hidden]
