"""A weighted mean over the top-k dim, keepdim, bf16: the weight is read per inner position."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, hidden=96):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x):
        return (x * self.weight).mean(dim=1, keepdim=True)


CASES = [dict(T=1), dict(T=4)]


def get_inputs(T):
    return [torch.randn(T, 8, 96, dtype=torch.bfloat16)]


def get_init_inputs():
    return [96]
