import torch
import torch.nn as nn


def _chunked(t, size):
    b, n = t.shape[:2]
    return t.reshape(b, n // size, size, *t.shape[2:])


class Model(nn.Module):
    """Final hidden state of a chunked selective state-space scan.

    Each chunk's own contribution to the state is accumulated with its within-chunk decays; the chunk
    states are then folded left to right with a plain recurrence state <- exp(decay_total) * state + new."""

    def __init__(self, batch_size, seq_length, n_heads, d_head, d_state, block_len=64):
        super().__init__()
        assert seq_length % block_len == 0
        self.block_len = block_len
        self.A = nn.Parameter(torch.randn(batch_size, seq_length, n_heads))
        self.B = nn.Parameter(torch.randn(batch_size, seq_length, n_heads, d_state))
        self.C = nn.Parameter(torch.randn(batch_size, seq_length, n_heads, d_state))  # unused by the final state

    def _chunk_states(self, X):
        L = self.block_len
        xs, bs = _chunked(X, L), _chunked(self.B, L)  # b c l h p / b c l h n
        a = _chunked(self.A, L).transpose(2, 3)  # b c h l
        a_run = torch.cumsum(a, dim=-1)
        weights = torch.exp(a_run[..., -1:] - a_run)  # decay from each step to the chunk end
        states = torch.einsum("bclhn,bchl,bclhp->bchpn", bs, weights, xs)
        return states, a_run[..., -1]  # (b c h p n), (b c h)

    def forward(self, X):
        states, totals = self._chunk_states(X)
        state = torch.zeros_like(states[:, 0])
        for c in range(states.shape[1]):
            state = torch.exp(totals[:, c])[..., None, None] * state + states[:, c]
        return state


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
