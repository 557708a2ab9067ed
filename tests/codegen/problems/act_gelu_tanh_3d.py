"""GELU (tanh approximation) over a 3-d fp32 activation [B, S, H]."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x):
        return F.gelu(x, approximate="tanh")


CASES = [dict(B=1, S=3), dict(B=2, S=5)]


def get_inputs(B, S):
    return [torch.randn(B, S, 96) * 3]


def get_init_inputs():
    return []
