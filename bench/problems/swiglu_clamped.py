"""Clamped SwiGLU on interleaved (gate, up) columns, as mixture-of-experts models with a
bounded activation write it: x [T, 2 x 2880] bf16, gate = x[:, 0::2] clamped above at 7, up =
x[:, 1::2] clamped to [-7, 7], out = gate * sigmoid(1.702 * gate) * (up + 1), every op in bf16
as written (a new op of the suite: the clamped, interleaved gated-activation family)."""

import torch
import torch.nn as nn

CASES = [dict(T=1), dict(T=16), dict(T=64), dict(T=4096), dict(T=16384)]


class Model(nn.Module):
    def __init__(self, alpha=1.702, limit=7.0):
        super().__init__()
        self.alpha = alpha
        self.limit = limit

    def forward(self, x):
        gate, up = x[..., 0::2], x[..., 1::2]
        gate = gate.clamp(max=self.limit)
        up = up.clamp(min=-self.limit, max=self.limit)
        return gate * torch.sigmoid(gate * self.alpha) * (up + 1)


def get_inputs(T):
    return [torch.randn(T, 2 * 2880, dtype=torch.bfloat16) * 3]


def get_init_inputs():
    return []
