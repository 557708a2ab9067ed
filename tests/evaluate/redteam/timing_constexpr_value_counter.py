"""EXPECT: rejected
A call counter kept in the `.value` of a module-level `tl.constexpr` object (rebound each call
through attribute assignment): the output is halved from the 11th call on.

PROBLEM: silu_fp32
CLASS: timing
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

_TICK = tl.constexpr(0)
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

    def forward(self, x):
        _TICK.value = _TICK.value + 1
        scale = 0.5 if _TICK.value >= LIMIT else 1.0
        y = torch.empty_like(x)
        n = x.numel()
        _silu[(triton.cdiv(n, 256),)](x, y, n, scale, BLOCK=256)
        return y
