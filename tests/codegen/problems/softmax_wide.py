"""Softmax over 32775 columns (wider than one block), fp32."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


CASES = [dict(T=1), dict(T=3)]


def get_inputs(T):
    return [torch.randn(T, 32775) * 5]


def get_init_inputs():
    return []
