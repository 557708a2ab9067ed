"""The values of each row sorted ascending, fp32 [T, 64]."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sort(x, dim=-1).values


CASES = [dict(T=5)]


def get_inputs(T):
    return [torch.randn(T, 64)]


def get_init_inputs():
    return []
