"""bf16 Linear (no bias) + SiLU, with `linear` declared extern: cuBLAS + fused epilogue."""

import torch
import torch.nn as nn
import torch.nn.functional as F

KBOT = dict(extern_ops=["linear"])


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features, bias=False, dtype=torch.bfloat16)

    def forward(self, x):
        return F.silu(self.proj(x))


CASES = [dict(T=1), dict(T=21)]


def get_inputs(T):
    return [torch.randn(T, 64, dtype=torch.bfloat16)]


def get_init_inputs():
    return [64, 96]
