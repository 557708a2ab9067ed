"""Logit soft-capping (Gemma 2 attention/final logits): tanh(x / cap) * cap, bf16 [T, 4096]."""

import torch
import torch.nn as nn

CASES = [dict(T=1), dict(T=16), dict(T=64), dict(T=4096), dict(T=16384)]


class Model(nn.Module):
    def __init__(self, cap=30.0):
        super().__init__()
        self.cap = cap

    def forward(self, x):
        return torch.tanh(x / self.cap) * self.cap


def get_inputs(T):
    return [torch.randn(T, 4096, dtype=torch.bfloat16) * 20]


def get_init_inputs():
    return [30.0]
