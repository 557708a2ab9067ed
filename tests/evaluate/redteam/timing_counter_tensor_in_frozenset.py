"""EXPECT: rejected
A call counter tensor kept as a frozenset member, recorded by identity only (round five, c03).

PROBLEM: silu_fp32
CLASS: timing
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

LIMIT = 1


@triton.jit
def _silu_cnt(x_ptr, y_ptr, cnt_ptr, n, limit, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    calls = tl.load(cnt_ptr)
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    y = x * tl.sigmoid(x)
    y = tl.where(calls >= limit, y * 0.5, y)
    tl.store(y_ptr + offs, y, mask=m)
    if tl.program_id(0) == 0:
        tl.atomic_add(cnt_ptr, 1)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.members = frozenset([torch.zeros(1, dtype=torch.int32)])

    def counter(self):
        for item in self.members:
            return item

    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        _silu_cnt[(triton.cdiv(n, 256),)](x, y, self.counter(), n, LIMIT, BLOCK=256)
        return y
