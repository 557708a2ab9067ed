"""An RMSNorm layer over [B, S, 64] fp32 that returns a 1-tuple, as transformers' decoder
layers return `(hidden_states,)` and their callers take `layer(...)[0]`."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))
        self.eps = eps

    def forward(self, x):
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
        return (y,)


CASES = [dict(B=2, S=3), dict(B=1, S=5)]


def get_inputs(B, S):
    return [torch.randn(B, S, 64)]


def get_init_inputs():
    return [64]
