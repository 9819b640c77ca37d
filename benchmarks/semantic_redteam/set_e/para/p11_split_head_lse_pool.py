import math
import torch
import torch.nn as nn


def _lse(t):
    m = t.max(dim=1, keepdim=True).values
    return (m + torch.log(torch.exp(t - m).sum(dim=1, keepdim=True))).squeeze(1)


class Model(nn.Module):
    """Logistic hidden layer, then a linear head evaluated in two output blocks; the log-sum-exp
    over all outputs is assembled from the two blocks' log-sum-exps."""

    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        r = 1.0 / math.sqrt(input_size)
        self.w1 = nn.Parameter(torch.empty(input_size, hidden_size).uniform_(-r, r))
        self.b1 = nn.Parameter(torch.empty(hidden_size).uniform_(-r, r))
        a = output_size // 2
        self.head_a = nn.Linear(hidden_size, a)
        self.head_b = nn.Linear(hidden_size, output_size - a)

    def forward(self, x):
        h = torch.sigmoid(torch.addmm(self.b1, x, self.w1))
        return torch.logaddexp(_lse(self.head_a(h)), _lse(self.head_b(h)))


def get_inputs():
    return [torch.rand(7, 20)]


def get_init_inputs():
    return [20, 28, 18]
