import torch
import torch.nn as nn


class Affine(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        bound = 1.0 / n_in ** 0.5
        self.weight_t = nn.Parameter(torch.empty(n_in, n_out).uniform_(-bound, bound))
        self.shift = nn.Parameter(torch.empty(n_out).uniform_(-bound, bound))

    def forward(self, x):
        return x @ self.weight_t + self.shift


class Logistic(nn.Module):
    def forward(self, x):
        return 1.0 / (1.0 + torch.exp(-x))


class SoftMaximum(nn.Module):
    def forward(self, x):
        m = x.max(dim=1, keepdim=True).values
        return (m + torch.log(torch.exp(x - m).sum(dim=1, keepdim=True))).squeeze(1)


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.body = nn.Sequential(
            Affine(input_size, hidden_size),
            Logistic(),
            Affine(hidden_size, output_size),
            SoftMaximum(),
        )

    def forward(self, x):
        return self.body(x)


batch_size = 1024
input_size = 256
hidden_size = 512
output_size = 128


def get_inputs():
    return [torch.rand(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, output_size]
