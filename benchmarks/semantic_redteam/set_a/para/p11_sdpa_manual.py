import math
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, q, k, v):
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(q.size(-1))
        weights = torch.softmax(scores, dim=-1)
        return torch.einsum("bhqk,bhkd->bhqd", weights, v)


batch_size = 32
num_heads = 32
sequence_length = 512
embedding_dimension = 1024


def get_inputs():
    shape = (batch_size, num_heads, sequence_length, embedding_dimension)
    return [torch.rand(shape), torch.rand(shape), torch.rand(shape)]


def get_init_inputs():
    return []
