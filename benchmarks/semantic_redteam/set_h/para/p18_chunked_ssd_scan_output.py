import torch
import torch.nn as nn
import torch.nn.functional as F


def _to_chunks(t, chunk):
    b, n = t.shape[:2]
    return t.reshape(b, n // chunk, chunk, *t.shape[2:])


def _pairwise_segment_sums(a):
    """out[..., i, j] = a[..., j+1] + ... + a[..., i] for j <= i, -inf above the diagonal."""
    n = a.shape[-1]
    run = a.cumsum(dim=-1)
    out = run.unsqueeze(-1) - run.unsqueeze(-2)
    lower = torch.ones(n, n, dtype=torch.bool, device=a.device).tril()
    return out.masked_fill(~lower, float("-inf"))


class Model(nn.Module):
    """Chunked structured state-space (SSD) scan returning the output sequence.

    Within a chunk the output is a decay-masked attention-like product; across chunks the states are
    carried forward with the cumulative decays. Decay logits and input/output projections are learned
    tensors of the full (batch, length, heads[, state]) shape."""

    def __init__(self, batch_size, seq_length, n_heads, d_head, d_state, block_len=64):
        super().__init__()
        assert seq_length % block_len == 0
        self.chunk = block_len
        self.log_decay = nn.Parameter(torch.randn(batch_size, seq_length, n_heads))
        self.in_proj = nn.Parameter(torch.randn(batch_size, seq_length, n_heads, d_state))
        self.out_proj = nn.Parameter(torch.randn(batch_size, seq_length, n_heads, d_state))

    def forward(self, X):
        L = self.chunk
        xs = _to_chunks(X, L)  # b c l h p
        bs = _to_chunks(self.in_proj, L)  # b c l h n
        cs = _to_chunks(self.out_proj, L)
        a = _to_chunks(self.log_decay, L).permute(0, 3, 1, 2)  # b h c l
        a_run = a.cumsum(dim=-1)

        # within-chunk contribution
        mask = torch.exp(_pairwise_segment_sums(a))  # b h c l s
        scores = torch.einsum("bclhn,bcshn->bhcls", cs, bs) * mask
        y_local = torch.einsum("bhcls,bcshp->bclhp", scores, xs)

        # state left at the end of every chunk
        to_end = torch.exp(a_run[..., -1:] - a_run)
        ends = torch.einsum("bclhn,bhcl,bclhp->bchpn", bs, to_end, xs)

        # carry states across chunks (zero initial state)
        ends = torch.cat([torch.zeros_like(ends[:, :1]), ends], dim=1)
        transfer = torch.exp(_pairwise_segment_sums(F.pad(a_run[..., -1], (1, 0))))
        carried = torch.einsum("bhzc,bchpn->bzhpn", transfer, ends)[:, :-1]

        y_carry = torch.einsum("bclhn,bchpn,bhcl->bclhp", cs, carried, torch.exp(a_run))
        return (y_local + y_carry).reshape(X.shape)


batch_size = 2
seq_length = 64
n_heads = 4
d_head = 8
d_state = 4
block_len = 16


def get_inputs():
    return [torch.rand(batch_size, seq_length, n_heads, d_head)]


def get_init_inputs():
    return [batch_size, seq_length, n_heads, d_head, d_state, block_len]
