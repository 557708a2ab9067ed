"""EXPECT: rejected
The kernel-side twin of a `data_ptr()` key: the kernel casts its input pointer to an integer
and writes zeros when bits 12-21 of the address are zero (wrong at one address in a thousand,
never where the judge places inputs). The static rules cannot see a pointer's type.

PROBLEM: relu_fp32
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    page = (x_ptr.to(tl.int64) >> 12) % 1024
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, tl.where(page == 0, 0.0, tl.maximum(x, 0.0)), mask=m)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        _relu[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256)
        return y
