"""EXPECT: rejected
argmax answering the last of tied maxima where torch documents the first (round seven, c05).
Only indices whose tie order torch leaves open may differ.

PROBLEM: argmax_rows
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _argmax_last(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=float("-inf"))
    m = tl.max(x, axis=0)
    idx = tl.max(tl.where(x == m, cols, -1), axis=0)
    tl.store(y_ptr + row, idx.to(tl.int64))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        T, N = x.shape
        y = torch.empty(T, dtype=torch.int64, device=x.device)
        _argmax_last[(T,)](x, y, N, x.stride(0), BLOCK=triton.next_power_of_2(N))
        return y
