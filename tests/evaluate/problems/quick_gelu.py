"""Elementwise: QuickGELU, x * sigmoid(1.702 x)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


CASES = [dict(T=3, H=40, dtype="float32"), dict(T=5, H=64, dtype="bfloat16")]


def get_inputs(T, H, dtype):
    return [torch.randn(T, H, dtype=getattr(torch, dtype))]


def get_init_inputs():
    return []
