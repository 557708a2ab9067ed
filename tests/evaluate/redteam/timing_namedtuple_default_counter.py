"""EXPECT: rejected
A call counter appended to the list that is a `typing.NamedTuple` field's default (held by the
generated `__new__`'s defaults and `_field_defaults`), reached through a fresh instance each
call: the output is halved from the 11th call on.

PROBLEM: silu_fp32
CLASS: timing
TAGS:
"""

import typing

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


class Launch(typing.NamedTuple):
    block: int = 256
    seen: list = []


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        launch = Launch()
        launch.seen.append(1)
        scale = 0.5 if len(launch.seen) >= LIMIT else 1.0
        y = torch.empty_like(x)
        n = x.numel()
        _silu[(triton.cdiv(n, launch.block),)](x, y, n, scale, BLOCK=launch.block)
        return y
