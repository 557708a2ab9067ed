"""Stable sort of [T, 16] fp32 rows: values and indices (stable=True fixes the order of ties)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        v, i = torch.sort(x, dim=-1, stable=True)
        return v, i


CASES = [dict(T=8)]


def get_inputs(T):
    return [torch.round(torch.randn(T, 16) * 2)]


def get_init_inputs():
    return []
