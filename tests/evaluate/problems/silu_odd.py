"""SiLU on [T, 250] fp32 (a row length that is not a power of two)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * torch.sigmoid(x)


CASES = [dict(T=4), dict(T=3)]


def get_inputs(T):
    return [torch.randn(T, 250)]


def get_init_inputs():
    return []
