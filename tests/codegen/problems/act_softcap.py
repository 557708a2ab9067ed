"""Logit soft-capping (Gemma 2): tanh(x / cap) * cap, bf16; `cap` is a plain attribute."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, cap=30.0):
        super().__init__()
        self.cap = cap

    def forward(self, x):
        return torch.tanh(x / self.cap) * self.cap


CASES = [dict(T=2), dict(T=5)]


def get_inputs(T):
    return [torch.randn(T, 1000, dtype=torch.bfloat16) * 40]


def get_init_inputs():
    return [30.0]
