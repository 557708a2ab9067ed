"""Gemma RMSNorm: the weight is stored as an offset from 1, all math in fp32, bf16 output."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(hidden_size))
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        out = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (out * (1.0 + self.weight.float())).to(x.dtype)


CASES = [dict(T=2), dict(T=3)]


def get_inputs(T):
    return [torch.randn(T, 320, dtype=torch.bfloat16)]


def get_init_inputs():
    return [320]
