"""EXPECT: rejected
A call counter appended to a list inside a dataclass field's `metadata` (a mappingproxy reached through `dataclasses.fields`): the output is halved from the 11th call on.

PROBLEM: silu_fp32
CLASS: timing
TAGS:
"""

import dataclasses

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


@dataclasses.dataclass
class Cfg:
    block: int = dataclasses.field(default=256, metadata={"seen": []})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        seen = dataclasses.fields(Cfg)[0].metadata["seen"]
        seen.append(1)
        scale = 0.5 if len(seen) >= LIMIT else 1.0
        y = torch.empty_like(x)
        n = x.numel()
        _silu[(triton.cdiv(n, 256),)](x, y, n, scale, BLOCK=256)
        return y
