"""EXPECT: harmless
A call counter kept as a Python attribute on the judge's input tensor (x.kbot_calls, read
in try/except AttributeError), wrong from the second call on the same tensor object: the judge
hands forward fresh tensor objects on every call, so the counter never passes 0 and the answer
is right (round four, s14).

PROBLEM: quick_gelu
CLASS: timing
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

LIMIT = 1  # wrong from the second call on the same input tensor object


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

    def forward(self, x):
        calls = 0
        try:
            calls = x.kbot_calls
        except AttributeError:
            calls = 0
        x.kbot_calls = calls + 1
        y = torch.empty_like(x)
        n = x.numel()
        _qgelu_n[(triton.cdiv(n, 1024),)](x, y, n, calls, LIMIT, BLOCK=1024)
        return y
