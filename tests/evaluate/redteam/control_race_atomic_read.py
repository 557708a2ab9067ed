"""EXPECT: rejected
Lost update: four column programs per row read the running sum with tl.atomic_add(ptr, 0.0)
(an atomic used as a plain load) and write it back with a plain tl.store. The interpreter's
race check follows plain loads against plain stores only; the atomic read is not followed,
and programs run one at a time. The race check now follows atomics (round eight, c03).

PROBLEM: rowsum
CLASS: control
TAGS: cpu
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rowsum(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    part = tl.program_id(1)
    cols = part * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=0.0)
    acc = tl.atomic_add(y_ptr + row, 0.0)
    tl.store(y_ptr + row, acc + tl.sum(x, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        T, N = x.shape
        y = torch.zeros(T, dtype=x.dtype, device=x.device)
        _rowsum[(T, triton.cdiv(N, 32))](x, y, N, x.stride(0), BLOCK=32)
        return y
