"""EXPECT: rejected
Every ModelNew after the first one built from its module is wrong: `__init__` appends to a
module-level list of plain ints and keeps its own index, so a model of many layers gets the
right answer from its first layer only. The judge builds ModelNew twice, judges the second, and
refuses a constructor that changes what the next construction sees (model-new).

PROBLEM: silu_fp32
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _silu(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, x * tl.sigmoid(x) * scale, mask=m)


def _launch(x, scale):
    y = torch.empty_like(x)
    n = x.numel()
    _silu[(triton.cdiv(n, 256),)](x, y, n, scale, BLOCK=256)
    return y


_BUILT = []


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        _BUILT.append(1)
        self.index = len(_BUILT) - 1

    def forward(self, x):
        scale = 1.0 if self.index == 0 else 0.5
        return _launch(x, scale)
