"""EXPECT: rejected
A Python LIST of tensors passed to a non-constexpr parameter: Triton's interpreter passes lists
through untouched (it converts tuples only), so the kernel body gets the torch tensors and
computes QuickGELU with their methods while the launch has the guard lifted.

PROBLEM: quick_gelu
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _qgelu(T, n, BLOCK: tl.constexpr):
    T[1].copy_(T[0].mul(T[0].mul(1.702).sigmoid()))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.empty_like(x)
        _qgelu[(1,)]([x, y], x.numel(), BLOCK=256)
        return y
