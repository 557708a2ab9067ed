"""y = cumsum(x @ w, -1) in fp32; the GEMM is a declared extern op (torch.matmul), the cumsum
is not."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.w = nn.Parameter(torch.randn(k, n) / k**0.5)

    def forward(self, x):
        return (x @ self.w).cumsum(-1)


KBOT = dict(extern_ops=["matmul"])
CASES = [dict(T=8)]


def get_inputs(T):
    return [torch.randn(T, 32)]


def get_init_inputs():
    return [32, 48]
