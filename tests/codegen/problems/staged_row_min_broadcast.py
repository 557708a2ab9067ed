"""A per-row min broadcast against a per-channel bias: (B, 1) + (1, C, 1, 1) is (1, C, B, 1),
as many elements as the (B, C) input but not a reshape of it (stored at the input's index
reshaped, GroupNorm's way, it was wrong). No reduction's tile covers it: the min is written to
a buffer and a pointwise kernel over the output's shape adds the bias."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(1, 8, 1, 1))

    def forward(self, x):
        return torch.min(x, dim=1, keepdim=True)[0] + self.bias


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return []
