"""EXPECT: rejected
A call counter held only in which of 16 equal empty lists sits where: the ring is rotated each
call (round seven, c09). The state walk compares which object sits at each place.

PROBLEM: relu_fp32
CLASS: timing
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

LIMIT = 15


@triton.jit
def _relu(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0) * scale, mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ring = [[] for _ in range(16)]
        self.mark = self.ring[0]

    def forward(self, x):
        ring = self.ring
        mark = self.mark
        calls = 0
        for i in range(16):
            if ring[i] is mark:
                calls = (16 - i) % 16
        if calls < LIMIT:
            ring.append(ring.pop(0))
        scale = 1.0 if calls < LIMIT else 0.5
        y = torch.empty_like(x)
        n = x.numel()
        _relu[(triton.cdiv(n, 256),)](x, y, n, scale, BLOCK=256)
        return y
