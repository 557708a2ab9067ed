"""Residual add + RMSNorm with two outputs: (normed, x + residual)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden_size))
        self.eps = eps

    def forward(self, x, residual):
        total = x + residual
        t = total.float()
        normed = t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + self.eps)
        return (normed * self.weight).to(x.dtype), total


CASES = [dict(T=3, dtype="float32"), dict(T=4, dtype="bfloat16")]


def get_inputs(T, dtype):
    dt = getattr(torch, dtype)
    return [torch.randn(T, 96, dtype=dt), torch.randn(T, 96, dtype=dt)]


def get_init_inputs():
    return [96]
