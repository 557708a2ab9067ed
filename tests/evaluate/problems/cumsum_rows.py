"""Cumulative sum along rows of [T, 512] fp32."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.cumsum(x, dim=-1)


CASES = [dict(T=4)]


def get_inputs(T):
    return [torch.randn(T, 512)]


def get_init_inputs():
    return []
