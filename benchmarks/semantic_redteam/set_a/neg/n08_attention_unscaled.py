import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, Q, K, V):
        attn = torch.softmax(Q @ K.transpose(-2, -1), dim=-1)
        return attn @ V


batch_size = 32
num_heads = 32
sequence_length = 512
embedding_dimension = 1024


def get_inputs():
    s = (batch_size, num_heads, sequence_length, embedding_dimension)
    return [torch.rand(s), torch.rand(s), torch.rand(s)]


def get_init_inputs():
    return []
