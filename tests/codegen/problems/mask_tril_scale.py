"""A causal-mask style op: tril below the diagonal of a scaled input (torch.tril decomposes to
arange + a comparison + where)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.tril(x * 2.0, diagonal=-1)


CASES = [dict(T=5), dict(T=33)]


def get_inputs(T):
    return [torch.randn(T, 48)]


def get_init_inputs():
    return []
