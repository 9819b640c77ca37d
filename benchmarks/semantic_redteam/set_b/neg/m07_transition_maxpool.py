import torch
import torch.nn as nn


class Model(nn.Module):
    """Transition block with max pooling: BatchNorm -> ReLU -> 1x1 conv -> 2x2 max pool."""

    def __init__(self, num_input_features, num_output_features):
        super().__init__()
        self.transition = nn.Sequential(
            nn.BatchNorm2d(num_input_features),
            nn.ReLU(inplace=True),
            nn.Conv2d(num_input_features, num_output_features, kernel_size=1, bias=False),
            nn.MaxPool2d(kernel_size=2, stride=2),
        )

    def forward(self, x):
        return self.transition(x)


batch_size = 128
num_input_features = 32
num_output_features = 64
height, width = 256, 256


def get_inputs():
    return [torch.rand(batch_size, num_input_features, height, width)]


def get_init_inputs():
    return [num_input_features, num_output_features]
