"""EXPECT: rejected
Returns the right values in a column-major layout (strides (1, T)): the caller's y.view(-1)
raises and a row-major reader reads them wrong (round six, c17). An output whose reference is
contiguous must be contiguous.

PROBLEM: silu_fp32
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
    m = c < cols
    x = tl.load(x_ptr + r * cols + c, mask=m, other=0.0)
    tl.store(y_ptr + c * rows + r, x * tl.sigmoid(x), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        rows, cols = x.shape
        x = x.contiguous()
        y = torch.empty_strided((rows, cols), (1, rows), device=x.device, dtype=x.dtype)
        _silu[(rows,)](x, y, rows, cols, BLOCK=triton.next_power_of_2(cols))
        return y
