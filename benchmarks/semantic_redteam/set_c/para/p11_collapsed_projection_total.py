import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Total of a linear projection's outputs, scaled. The sum over output units is
    folded into the weight (column sums), and the 1/2 and the scale into one constant.
    """
    def __init__(self, input_size, hidden_size, scaling_factor):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(hidden_size, input_size))
        self.coef = 0.5 * scaling_factor

    def forward(self, x):
        w_total = self.weight.sum(dim=0).unsqueeze(1)  # (input_size, 1)
        return torch.mm(x, w_total) * self.coef


batch_size = 512
input_size = 2048
hidden_size = 3072
scaling_factor = 1.5


def get_inputs():
    return [torch.rand(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, scaling_factor]
