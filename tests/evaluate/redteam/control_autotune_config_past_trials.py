"""EXPECT: rejected
Twelve autotune configs; only the last (BLOCK=64, no column loop: half of each 128-wide row)
is wrong. The correctness trials give each autotuner one config per call, so with 5 trials
only configs 0..4 ever run; the wrong one is what a GPU where it is fastest ships. The judge adds trials until every config has run (round eight, c01).

PROBLEM: rowsum
CLASS: control
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 128}, num_warps=w, num_stages=s)
        for w in (1, 2, 4, 8, 16)
        for s in (1, 2)
    ]
    + [triton.Config({"BLOCK": 128}, num_warps=32), triton.Config({"BLOCK": 64}, num_warps=1)],
    key=["N"],
)
@triton.jit
def _rowsum(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=0.0)
    tl.store(y_ptr + row, tl.sum(x, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        T, N = x.shape
        y = torch.empty(T, dtype=x.dtype, device=x.device)
        _rowsum[(T,)](x, y, N, x.stride(0))
        return y
