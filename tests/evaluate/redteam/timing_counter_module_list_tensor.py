"""EXPECT: rejected
A call counter tensor kept in a module-level list (filled in __init__, never on the model),
bumped by the kernel's atomic add: right for the first 12 calls, half the answer after them.

PROBLEM: quick_gelu
CLASS: timing
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

_STORE = []


@triton.jit
def _qgelu_bomb(x_ptr, y_ptr, cnt_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    calls = tl.load(cnt_ptr)
    x = tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float32)
    y = x * tl.sigmoid(1.702 * x)
    y = tl.where(calls >= 12, y * 0.5, y)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=m)
    if tl.program_id(0) == 0:
        tl.atomic_add(cnt_ptr, 1)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        _STORE.append(torch.zeros(1, dtype=torch.int32))

    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        _qgelu_bomb[(triton.cdiv(n, 1024),)](x, y, _STORE[0], n, BLOCK=1024)
        return y
