"""EXPECT: rejected
The tensors go to NON-constexpr kernel parameters wrapped in `tl.constexpr(...)` objects;
Triton's interpreter hands the body the objects, whose `.value` is the torch tensor, and
QuickGELU is computed with tensor methods while the launch has the guard lifted.

PROBLEM: quick_gelu
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _qgelu(X, Y, n, BLOCK: tl.constexpr):
    Y.value.copy_(X.value.mul(X.value.mul(1.702).sigmoid()))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.empty_like(x)
        _qgelu[(1,)](tl.constexpr(x), tl.constexpr(y), x.numel(), BLOCK=256)
        return y
