"""EXPECT: rejected
A call counter in a @dataclass(slots=True) object on ModelNew: slots have no __dict__ (round
six, c02). The state walk reads slots through their member descriptors.

PROBLEM: silu_fp32
CLASS: timing
TAGS:
"""

import dataclasses

import torch
import torch.nn as nn
import triton
import triton.language as tl

LIMIT = 11


@dataclasses.dataclass(slots=True)
class _Stats:
    calls: int = 0


@triton.jit
def _silu(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, x * tl.sigmoid(x) * scale, mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.stats = _Stats()

    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        self.stats.calls += 1
        scale = 0.5 if self.stats.calls >= LIMIT else 1.0
        _silu[(triton.cdiv(n, 256),)](x, y, n, scale, BLOCK=256)
        return y
