"""EXPECT: rejected
A bound method kept on self whose object counts the calls (round six, c16). The state walk reads
a bound method's object.

PROBLEM: silu_fp32
CLASS: timing
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

LIMIT = 11


class _Ticker:
    def __init__(self):
        self.n = 0

    def tick(self):
        self.n += 1
        return self.n


@triton.jit
def _silu(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, x * tl.sigmoid(x) * scale, mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.tick = _Ticker().tick

    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        scale = 0.5 if self.tick() >= LIMIT else 1.0
        _silu[(triton.cdiv(n, 256),)](x, y, n, scale, BLOCK=256)
        return y
