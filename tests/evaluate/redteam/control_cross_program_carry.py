"""EXPECT: rejected
A blocked row cumsum whose programs pass each block's running total to the next through memory
with no flag or atomic: right only when programs run in order, as Triton's CPU interpreter ran
them (round six, c13). The interpreter now runs each launch's programs in a random order.

PROBLEM: cumsum_rows
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _cumsum(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    blk = tl.program_id(1)
    offs = blk * BLOCK + tl.arange(0, BLOCK)
    m = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=m, other=0.0)
    part = tl.cumsum(x, axis=0)
    prev = tl.maximum(blk * BLOCK - 1, 0)
    carry = tl.load(y_ptr + row * cols + prev)
    carry = tl.where(blk > 0, carry, 0.0)
    tl.store(y_ptr + row * cols + offs, part + carry, mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        rows, cols = x.shape
        y = torch.empty_like(x)
        _cumsum[(rows, triton.cdiv(cols, 128))](x, y, cols, BLOCK=128)
        return y
