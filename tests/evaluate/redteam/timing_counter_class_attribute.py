"""EXPECT: rejected
A call counter in a Python list held as a CLASS attribute of ModelNew (read as `self.hist`,
never in the instance's `vars`): after 12 calls the launch scales its output by 0.5.

PROBLEM: quick_gelu
CLASS: timing
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _qgelu(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float32)
    y = x * tl.sigmoid(1.702 * x) * scale
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=m)


class ModelNew(nn.Module):
    hist = []

    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        list.append(self.hist, 0)
        scale = 0.5 if len(self.hist) > 12 else 1.0
        _qgelu[(triton.cdiv(n, 1024),)](x, y, n, scale, BLOCK=1024)
        return y
