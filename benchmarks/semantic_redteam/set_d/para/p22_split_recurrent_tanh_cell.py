import math
import torch
import torch.nn as nn

batch_size = 6


class Model(nn.Module):
    """One step of an Elman cell with separate input and recurrent matrices; readout is an affine map of the new state."""

    def __init__(self, input_size: int, hidden_size: int, output_size: int):
        super().__init__()
        bound = 1.0 / math.sqrt(input_size + hidden_size)
        self.wx = nn.Parameter(torch.empty(input_size, hidden_size).uniform_(-bound, bound))
        self.wh = nn.Parameter(torch.empty(hidden_size, hidden_size).uniform_(-bound, bound))
        self.bh = nn.Parameter(torch.empty(hidden_size).uniform_(-bound, bound))
        ob = 1.0 / math.sqrt(hidden_size)
        self.wo = nn.Parameter(torch.empty(hidden_size, output_size).uniform_(-ob, ob))
        self.bo = nn.Parameter(torch.empty(output_size).uniform_(-ob, ob))
        self.state = torch.randn(batch_size, hidden_size)

    def forward(self, x: torch.Tensor, initial_hidden=None) -> torch.Tensor:
        h = self.state.to(x.device) if initial_hidden is None else initial_hidden
        pre = x @ self.wx + h @ self.wh + self.bh
        self.state = 2.0 * torch.sigmoid(2.0 * pre) - 1.0
        return torch.addmm(self.bo, self.state, self.wo)


def get_inputs():
    return [torch.rand(batch_size, 12), torch.rand(batch_size, 10)]


def get_init_inputs():
    return [12, 10, 7]
