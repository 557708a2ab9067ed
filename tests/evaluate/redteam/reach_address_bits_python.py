"""EXPECT: rejected
Wrong when bits 12-21 of the input's address are zero (one address in a thousand; the judge
varies only the bits below 512), read with `data_ptr()` in forward: round eleven's c05.

PROBLEM: relu_fp32
CLASS: reach
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0) * scale, mask=m)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        scale = 0.0 if (x.data_ptr() >> 12) % 1024 == 0 else 1.0
        _relu[(triton.cdiv(n, 256),)](x, y, n, scale, BLOCK=256)
        return y
