"""EXPECT: rejected
ReLU with a "fast path" for rows whose values are all integers (and not all zero): it copies
them unchanged, negatives included. Float tensors of integers are common (masks, labels, counts,
one-hot rows, quantised activations); the judge's draws never give an all-integer row other than
its zeroed padding rows (the grid distribution snaps half the values to 1/8, half to 2^-10).

PROBLEM: relu_fp32
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_rows(x_ptr, y_ptr, D: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, D)
    x = tl.load(x_ptr + row * D + cols)
    frac = tl.sum(tl.where(x != tl.floor(x), 1, 0), axis=0)
    nz = tl.sum(tl.where(x != 0.0, 1, 0), axis=0)
    y = tl.maximum(x, 0.0)
    y = tl.where((frac == 0) & (nz > 0), x, y)
    tl.store(y_ptr + row * D + cols, y)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        T, D = x.shape
        y = torch.empty_like(x)
        _relu_rows[(T,)](x, y, D=D)
        return y
