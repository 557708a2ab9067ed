"""y = x @ w + r (residual input), fp32; the GEMM may use torch's matmul."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.w = nn.Parameter(torch.randn(k, n) / k**0.5)

    def forward(self, x, r):
        return x @ self.w + r


KBOT = dict(extern_ops=["matmul"])
CASES = [dict(T=8)]


def get_inputs(T):
    return [torch.randn(T, 32), torch.randn(T, 48)]


def get_init_inputs():
    return [32, 48]
