"""RMSNorm (Llama): fp32 statistics, cast to bf16, times a bf16 weight. Hidden 4096."""

import torch
import torch.nn as nn

CASES = [dict(T=1), dict(T=16), dict(T=64), dict(T=4096), dict(T=16384)]


class Model(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size, dtype=torch.bfloat16))
        self.variance_epsilon = eps

    def forward(self, x):
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return xf.to(x.dtype) * self.weight


def get_inputs(T):
    return [torch.randn(T, 4096, dtype=torch.bfloat16)]


def get_init_inputs():
    return [4096]
