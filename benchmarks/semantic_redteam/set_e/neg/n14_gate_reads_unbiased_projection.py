import math
import torch
import torch.nn as nn


class Model(nn.Module):
    """y = (W x + b) + s * sigmoid(W x): the logistic branch reads the projection before its bias.

    The residual branch carries the bias, the gate does not; with a single (W, b) pair shared by
    both, no tie makes sigmoid(W x) equal sigmoid(W' x + b') unless the bias is zero, so the
    outputs differ by s*(sigmoid(Wx + b) - sigmoid(Wx)) ~ s*b/4.
    """

    def __init__(self, input_size, hidden_size, scaling_factor):
        super().__init__()
        self.gemm = nn.Linear(input_size, hidden_size)
        self.scaling_factor = scaling_factor

    def forward(self, x):
        u = x @ self.gemm.weight.t()
        return u + self.gemm.bias + self.scaling_factor * torch.sigmoid(u)


def get_inputs():
    return [torch.rand(8, 32)]


def get_init_inputs():
    return [32, 24, 2.0]
