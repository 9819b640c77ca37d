import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Simple model that performs 1D pooling over a sliding window.
    """
    def __init__(self, kernel_size: int, stride: int = 1, padding: int = 0):
        super(Model, self).__init__()
        self.pool = nn.MaxPool1d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 16
in_channels = 64
input_length = 16384
kernel_size = 8
stride = 1
padding = 4


def get_inputs():
    x = torch.rand(batch_size, in_channels, input_length)
    return [x]


def get_init_inputs():
    return [kernel_size, stride, padding]
