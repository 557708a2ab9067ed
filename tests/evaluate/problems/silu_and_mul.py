"""Gated activation: silu(x[:, :d]) * x[:, d:]."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        d = x.shape[-1] // 2
        return F.silu(x[..., :d]) * x[..., d:]


CASES = [dict(T=3, D=48, dtype="float32"), dict(T=4, D=64, dtype="bfloat16")]


def get_inputs(T, D, dtype):
    return [torch.randn(T, 2 * D, dtype=getattr(torch, dtype))]


def get_init_inputs():
    return []
