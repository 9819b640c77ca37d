import torch
import torch.nn as nn


class Model(nn.Module):
    """Turns each row of scores into a probability vector."""
    def __init__(self):
        super().__init__()

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        log_z = torch.logsumexp(scores, dim=-1, keepdim=True)
        return torch.exp(scores - log_z)


batch_size = 64
dim = 196608


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
