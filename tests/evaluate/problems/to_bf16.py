"""x.to(torch.bfloat16) on [T, 256] fp32 -> bf16 (a pure cast problem)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.to(torch.bfloat16)


CASES = [dict(T=3), dict(T=8)]


def get_inputs(T):
    return [torch.randn(T, 256)]


def get_init_inputs():
    return []
