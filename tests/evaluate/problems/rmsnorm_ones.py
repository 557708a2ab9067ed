"""RMSNorm as LLaMA writes it: the weight starts at ones (nn.RMSNorm / LlamaRMSNorm), fp32 rows of 128."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


CASES = [dict(T=6), dict(T=3)]


def get_inputs(T):
    return [torch.randn(T, 128)]


def get_init_inputs():
    return [128]
