"""EXPECT: rejected
The whole fp32 -> bf16 cast done by `x.new_tensor(..., dtype=torch.bfloat16)` of element
views, read past the dispatcher; a memcpy kernel is launched beside it (round five, c09).

PROBLEM: to_bf16
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=m), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        rows, cols = x.shape
        t = x.new_tensor(
            [[x[i, j] for j in range(cols)] for i in range(rows)], dtype=torch.bfloat16
        )
        y = torch.empty_like(t)
        _copy[(triton.cdiv(t.numel(), 256),)](t, y, t.numel(), BLOCK=256)
        return y
