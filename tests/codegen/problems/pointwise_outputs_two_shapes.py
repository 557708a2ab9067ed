"""Three pointwise outputs of two shapes, in interleaved order: silu(x) [T, 48],
y * w + 1 [T, 3, 8], x + 1 [T, 48] (fp32)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x, y):
        return torch.nn.functional.silu(x), y * self.weight + 1.0, x + 1.0


CASES = [dict(T=1), dict(T=6)]


def get_inputs(T):
    return [torch.randn(T, 48), torch.randn(T, 3, 8)]


def get_init_inputs():
    return [8]
