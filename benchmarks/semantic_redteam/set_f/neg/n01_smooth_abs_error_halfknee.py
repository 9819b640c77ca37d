import torch
import torch.nn as nn


class Model(nn.Module):
    """Mean robust regression error: quadratic below the knee, linear above, with the pieces
    joined continuously (knee at 0.5: d^2 below, d - 0.25 above)."""

    def forward(self, predictions, targets):
        d = (predictions - targets).abs()
        return torch.where(d < 0.5, d * d, d - 0.25).mean()


def get_inputs():
    scale = torch.rand(())
    return [torch.rand(32, 60) * scale, torch.rand(32, 60)]


def get_init_inputs():
    return []
