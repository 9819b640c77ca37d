import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Binary focal loss on logits."""

    def __init__(self, alpha=0.25, gamma=2.0):
        super().__init__()
        self.alpha, self.gamma = alpha, gamma

    def forward(self, logits, targets):
        p = torch.sigmoid(logits)
        ce = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
        p_t = p * targets + (1 - p) * (1 - targets)
        a_t = self.alpha * targets + (1 - self.alpha) * (1 - targets)
        return (a_t * (1 - p_t) ** self.gamma * ce).mean()


batch_size, n = 8192, 1024


def get_inputs():
    return [torch.randn(batch_size, n), torch.randint(0, 2, (batch_size, n)).float()]


def get_init_inputs():
    return []
