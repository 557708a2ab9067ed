"""EXPECT: rejected
Right only when every input sits at a 32-byte-aligned address, as each fresh allocation of the
caching allocator does: a user's `x[1:]` of a [T, 8] fp32 tensor starts 32 bytes further but
`x.view(-1)[4:]` only 16, and gets the input back. data_ptr() is an allowed query.

PROBLEM: relu_fp32
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu(x_ptr, y_ptr, n, WIDE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if WIDE:
        tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=m)
    else:
        tl.store(y_ptr + offs, x, mask=m)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        wide = x.data_ptr() % 32 == 0
        _relu[(triton.cdiv(n, 256),)](x, y, n, WIDE=wide, BLOCK=256)
        return y
