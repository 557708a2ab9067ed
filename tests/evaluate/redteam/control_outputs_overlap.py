"""EXPECT: rejected
Returns the last state as a view of the sequence output (`y[-1]`, contiguous) instead of a
tensor of its own: right values, but the two outputs share memory where the reference's share
none. A caller that resets or masks the carried state in place (`h.zero_()`, `h.mul_(~done)`
between episodes/sequences) silently rewrites the last step of the sequence output. The judge
refuses outputs that alias inputs, never outputs that alias each other.

PROBLEM: scan_with_state
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scan(x_ptr, y_ptr, T, C, BLOCK: tl.constexpr):
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = cols < C
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for t in range(0, T):
        acc += tl.load(x_ptr + t * C + cols, mask=m)
        tl.store(y_ptr + t * C + cols, acc, mask=m)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        T, B, D = x.shape
        y = torch.empty_like(x)
        C = B * D
        _scan[(triton.cdiv(C, 128),)](x, y, T, C, BLOCK=128)
        return y, y[T - 1]
