"""EXPECT: rejected
A call counter as the length of `gc.callbacks` (a list in the gc module) grown by one no-op callback per call: the output is halved from the 11th call on.

PROBLEM: silu_fp32
CLASS: timing
TAGS: isolate
"""

import gc

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


def _noop(phase, info):
    return None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        gc.callbacks.append(_noop)
        scale = 0.5 if len(gc.callbacks) >= LIMIT else 1.0
        y = torch.empty_like(x)
        n = x.numel()
        _silu[(triton.cdiv(n, 256),)](x, y, n, scale, BLOCK=256)
        return y
