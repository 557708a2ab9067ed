"""RMSNorm as in Llama: fp32 statistics, cast to the input dtype, times a bf16 weight."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size, dtype=torch.bfloat16))
        self.eps = eps

    def forward(self, x):
        var = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(var + self.eps)).to(x.dtype) * self.weight


CASES = [dict(T=1), dict(T=5)]


def get_inputs(T):
    return [torch.randn(T, 384, dtype=torch.bfloat16)]


def get_init_inputs():
    return [384]
