"""y = (addmm(b, x, w)) * 0.5, fp32; the GEMM (with its bias) may use torch's addmm."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.w = nn.Parameter(torch.randn(k, n) / k**0.5)
        self.b = nn.Parameter(0.1 * torch.randn(n))

    def forward(self, x):
        return torch.addmm(self.b, x, self.w) * 0.5


KBOT = dict(extern_ops=["addmm"])
CASES = [dict(T=8)]


def get_inputs(T):
    return [torch.randn(T, 32)]


def get_init_inputs():
    return [32, 48]
