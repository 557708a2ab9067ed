"""EXPECT: rejected
A buffer zeroed in place every call: its bytes never change, its `_version` counts the calls
(round six, c03). The state walk compares versions and flags too.

PROBLEM: silu_fp32
CLASS: timing
TAGS:
"""

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
        self.register_buffer("tick", torch.zeros(1), persistent=False)

    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        self.tick.zero_()
        scale = 0.5 if self.tick._version >= LIMIT else 1.0
        _silu[(triton.cdiv(n, 256),)](x, y, n, scale, BLOCK=256)
        return y
