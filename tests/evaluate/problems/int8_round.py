"""int8 quantization: round(x * 64) (halves to even) clamped to int8."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.round(x * 64.0).clamp(-128, 127).to(torch.int8)


CASES = [dict(T=3), dict(T=8)]


def get_inputs(T):
    return [torch.randn(T, 256)]


def get_init_inputs():
    return []
