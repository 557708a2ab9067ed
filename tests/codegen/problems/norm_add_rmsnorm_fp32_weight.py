"""Residual add + RMSNorm whose weight is fp32, so the output is fp32 but carries bf16
precision: the normalised value is cast to bf16 first, and a one-ulp difference at a rounding
tie (any other summation order produces some) is 0.4-0.8%. Hence bf16 tolerances."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.eps = eps

    def forward(self, x, residual):
        x = x + residual
        var = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(var + self.eps)).to(x.dtype) * self.weight, x


CASES = [dict(T=1), dict(T=7)]
KBOT = dict(atol=1e-2, rtol=1.6e-2)


def get_inputs(T):
    return [torch.randn(T, 300, dtype=torch.bfloat16), torch.randn(T, 300, dtype=torch.bfloat16)]


def get_init_inputs():
    return [300]
