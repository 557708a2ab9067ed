"""GeGLU with interleaved halves: gelu(x[..., ::2]) * x[..., 1::2], fp32."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x):
        return F.gelu(x[..., ::2]) * x[..., 1::2]


CASES = [dict(T=1), dict(T=7)]


def get_inputs(T):
    return [torch.randn(T, 3, 2 * 40)]


def get_init_inputs():
    return []
