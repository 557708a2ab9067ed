"""Linear (with bias) + GELU epilogue on a 3-d fp32 activation: Triton GEMM template."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features)

    def forward(self, x):
        return F.gelu(self.proj(x))


CASES = [dict(T=1), dict(T=19)]


def get_inputs(T):
    return [torch.randn(2, T, 48)]


def get_init_inputs():
    return [48, 80]
