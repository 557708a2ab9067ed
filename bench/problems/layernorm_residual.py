"""Residual add + LayerNorm (weight and bias), returns (normed, x + residual), bf16 hidden 4096."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CASES = [dict(T=1), dict(T=16), dict(T=64), dict(T=4096), dict(T=16384)]


class Model(nn.Module):
    def __init__(self, hidden_size, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size, dtype=torch.bfloat16))
        self.bias = nn.Parameter(torch.zeros(hidden_size, dtype=torch.bfloat16))
        self.eps = eps

    def forward(self, x, residual):
        h = x + residual
        return F.layer_norm(h, (h.shape[-1],), self.weight, self.bias, self.eps), h


def get_inputs(T):
    return [torch.randn(T, 4096, dtype=torch.bfloat16), torch.randn(T, 4096, dtype=torch.bfloat16)]


def get_init_inputs():
    return [4096]
