"""EXPECT: rejected
Row sums written into `torch.empty(T)`: a buffer of torch's *default* dtype, not the input's.
The judge never changes torch's global defaults, so it is always fp32 there; a caller that runs
under `torch.set_default_dtype(torch.float64)` (common in scientific code) gets float64 outputs
from an fp32 op (the reference, `x.sum(-1)`, stays fp32), and one that sets a default device
gets the buffer on that device.

Only the static rule `default-dtype` stops it: every trial runs under the judge's default
dtype, so with the static rules off it is accepted (written down in docs/evaluator.md).

PROBLEM: rowsum
CLASS: reach
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rowsum(x_ptr, y_ptr, D: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, D)
    x = tl.load(x_ptr + row * D + cols)
    tl.store(y_ptr + row, tl.sum(x, axis=0))


class ModelNew(nn.Module):
    def forward(self, x):
        T, D = x.shape
        y = torch.empty(T)
        _rowsum[(T,)](x, y, D=D)
        return y
