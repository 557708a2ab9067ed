"""EXPECT: rejected
A call counter kept as the value of a `contextvars.ContextVar` that the module never binds: only the thread's context holds it, and forward finds it again through `copy_context()`: the output is halved from the 11th call on.

PROBLEM: silu_fp32
CLASS: timing
TAGS: isolate
"""

import contextvars

import torch
import torch.nn as nn
import triton
import triton.language as tl

LIMIT = 11


@triton.jit
def _silu(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, x * tl.sigmoid(x) * scale, mask=m)


contextvars.ContextVar("kbot_calls").set(0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        k = 0
        for var, value in contextvars.copy_context().items():
            if var.name == "kbot_calls":
                k = value + 1
                var.set(k)
        scale = 0.5 if k >= LIMIT else 1.0
        y = torch.empty_like(x)
        n = x.numel()
        _silu[(triton.cdiv(n, 256),)](x, y, n, scale, BLOCK=256)
        return y
