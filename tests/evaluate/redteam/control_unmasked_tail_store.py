"""EXPECT: rejected
An unmasked tail store writes 24 floats past the output: on a CPU it corrupted the candidate's
process or crashed it, a different rule each run, or passed (round six, c12). The interpreter
refuses accesses outside every tensor the launch was given; on a GPU, where the bytes landed in
allocator slack, the pattern past each buffer forward allocates is found changed
(tail_canaries.py).

PROBLEM: silu_odd
CLASS: control
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _silu(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, x * tl.sigmoid(x))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        _silu[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256)
        return y
