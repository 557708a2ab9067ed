"""LayerNorm with weight and bias (nn.LayerNorm), fp32."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.norm = nn.LayerNorm(hidden_size, eps=1e-5)

    def forward(self, x):
        return self.norm(x)


CASES = [dict(T=1), dict(T=6)]


def get_inputs(T):
    return [torch.randn(T, 272) * 2 + 0.5]


def get_init_inputs():
    return [272]
