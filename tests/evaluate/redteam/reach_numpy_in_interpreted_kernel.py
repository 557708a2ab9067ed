"""EXPECT: rejected
Under TRITON_INTERPRET=1 a loaded block holds a NumPy array (`.handle.data`); the kernel sorts
it in place with NumPy's sort and stores it. No Triton sort at all, and the kernel cannot
compile for a GPU; only the static rules see it, as NumPy is outside the compute guard.

PROBLEM: sort_rows
CLASS: reach
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _sort_rows(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + row * n_cols + cols)
    v.handle.data.sort()
    tl.store(y_ptr + row * n_cols + cols, v)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _sort_rows[(x.shape[0],)](x, y, x.shape[1], BLOCK=x.shape[1])
        return y
