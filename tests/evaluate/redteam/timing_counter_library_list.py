"""EXPECT: rejected
A call counter kept by appending to a library's list (`operator.__all__`) (round six, c04). The
libraries' public names and list sizes are state too.

PROBLEM: silu_fp32
CLASS: timing
TAGS:
"""

import operator

import torch
import torch.nn as nn
import triton
import triton.language as tl

LIMIT = 11


@triton.jit
def _silu(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, x * tl.sigmoid(x) * scale, mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.base = len(operator.__all__)

    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        operator.__all__.append("abs")
        scale = 0.5 if len(operator.__all__) - self.base >= LIMIT else 1.0
        _silu[(triton.cdiv(n, 256),)](x, y, n, scale, BLOCK=256)
        return y
