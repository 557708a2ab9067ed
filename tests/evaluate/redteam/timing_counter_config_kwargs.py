"""EXPECT: rejected
A call counter in the kwargs dict of a module-level triton.Config (a Triton object the
state walk once recorded by type name only): half the answer from the second call on (round
four, s07).

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


_STATE = triton.Config({"log": []})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        log = _STATE.kwargs["log"]
        calls = len(log)
        log.append(0)
        y = torch.empty_like(x)
        n = x.numel()
        _qgelu_n[(triton.cdiv(n, 1024),)](x, y, n, calls, LIMIT, BLOCK=1024)
        return y
