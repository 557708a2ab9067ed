"""EXPECT: rejected
Each row's program writes zeros into the head of the next row, which that row's program then
overwrites when programs run in order (round six, c19). Random program order in the interpreter
leaves some zeros standing.

PROBLEM: silu_odd
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _silu(x_ptr, y_ptr, rows, cols, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r * cols + c, mask=c < cols, other=0.0)
    keep = c < cols + (rows - 1 - r) * BLOCK
    tl.store(y_ptr + r * cols + c, x * tl.sigmoid(x), mask=keep)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        rows, cols = x.shape
        y = torch.empty_like(x)
        _silu[(rows,)](x, y, rows, cols, BLOCK=256)
        return y
