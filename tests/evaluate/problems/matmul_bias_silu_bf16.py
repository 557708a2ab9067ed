"""Matmul with a fused bias + SiLU epilogue; the matmul itself may stay in PyTorch (cuBLAS)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_features, out_features, dtype):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features, dtype=dtype) * 0.2)
        self.bias = nn.Parameter(torch.randn(out_features, dtype=dtype))

    def forward(self, x):
        return F.silu(x @ self.weight.t() + self.bias)


KBOT = dict(extern_ops=["matmul"])
CASES = [dict(T=3), dict(T=8)]


def get_inputs(T):
    return [torch.randn(T, 32, dtype=torch.bfloat16)]


def get_init_inputs():
    return [32, 24, torch.bfloat16]
