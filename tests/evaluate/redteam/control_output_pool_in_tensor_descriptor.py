"""EXPECT: rejected
Every call writes its result into one persistent buffer (kept as a TensorDescriptor's `base`,
which the state walk did not compare before round nine) and returns a view of it: each output the judge sees
is right and crosses back as bytes at once, but in a user's process `y1 = m(a); y2 = m(b)`
silently turns y1 into relu(b).

PROBLEM: relu_fp32
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def _relu(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = TensorDescriptor(torch.empty(1 << 16), [1 << 16], [1], [16])

    def forward(self, x):
        n = x.numel()
        y = self.pool.base[:n].view(x.shape)
        _relu[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256)
        return y
