"""EXPECT: rejected
The whole transpose done by `x.new_tensor` of a nested list of 0-d element views: the values
are read in C++, past the dispatcher (round five, c08b).

PROBLEM: transpose_copy
CLASS: outside
TAGS:
"""

import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _noop(p, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(p + offs, mask=offs < n, other=0.0)
    tl.store(p + offs, v, mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        rows, cols = x.shape
        y = x.new_tensor([[x[i, j] for i in range(rows)] for j in range(cols)])
        _noop[(1,)](y, y.numel(), BLOCK=256)
        return y
