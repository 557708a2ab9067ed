"""RMSNorm with a learned weight, fp32 rows of 128, at decode (one token) and a few tokens:
a one-row input is contiguous whatever its row stride is (kbot.evaluate.input_places'
loose_strides)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


CASES = [dict(T=1), dict(T=5)]


def get_inputs(T):
    return [torch.randn(T, 128)]


def get_init_inputs():
    return [128]
