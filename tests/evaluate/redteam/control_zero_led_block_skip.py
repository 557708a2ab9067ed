"""EXPECT: rejected
SiLU with a "dead block" skip: a 16-element block whose first element is exactly zero (+0.0 or
-0.0) is taken as a block of zeros and written as zeros. The judge's draws hold exact zeros only
in whole zero rows (outliers' padding rows), where the skip is right; a real caller's
post-ReLU / masked / sparse activations hold isolated zeros everywhere.

PROBLEM: silu_rows16
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _silu_blocks(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    base = tl.program_id(0) * BLOCK
    offs = base + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    lead = tl.load(x_ptr + base)
    y = x * tl.sigmoid(x)
    y = tl.where(lead == 0.0, 0.0, y)
    tl.store(y_ptr + offs, y, mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        _silu_blocks[(triton.cdiv(n, 16),)](x, y, n, BLOCK=16)
        return y
