"""EXPECT: rejected
State as the type of a plain attribute: self.mark goes 0 -> 0.0 -> False, values that
compare equal with == (the state walk once compared plain values, not their types), so the
calls can be told apart: half the answer from the second call on (round four, s11).

PROBLEM: quick_gelu
CLASS: timing
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

LIMIT = 1  # wrong from call 2 on: a judge blind to the state rejects it for a mismatch


@triton.jit
def _qgelu_n(x_ptr, y_ptr, n, calls, limit, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float32)
    y = x * tl.sigmoid(1.702 * x)
    y = tl.where(calls >= limit, y * 0.5, y)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.mark = 0

    def forward(self, x):
        calls = 2
        if isinstance(self.mark, int) and not isinstance(self.mark, bool):
            calls = 0
            self.mark = 0.0
        elif isinstance(self.mark, float):
            calls = 1
            self.mark = False
        y = torch.empty_like(x)
        n = x.numel()
        _qgelu_n[(triton.cdiv(n, 1024),)](x, y, n, calls, LIMIT, BLOCK=1024)
        return y
