"""EXPECT: rejected
RMSNorm with a "dedupe" of repeated rows: a program whose row is bit-identical to the row
before it (and not all zero) skips its store, leaving the output row as torch.empty left it.
The judge never draws two equal nonzero rows; parallel sampling (n > 1) and beam search
expand one hidden state into several identical rows.

PROBLEM: rmsnorm_weight
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rms(x_ptr, w_ptr, y_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=m, other=0.0)
    prev_row = tl.maximum(row - 1, 0)
    p = tl.load(x_ptr + prev_row * N + cols, mask=m, other=0.0)
    same = tl.sum(tl.where(m & (x != p), 1, 0), axis=0) == 0
    nonzero = tl.sum(tl.where(m & (x != 0.0), 1, 0), axis=0) > 0
    dup = same & nonzero & (row > 0)
    keep = tl.where(dup, 0, 1) + tl.zeros([BLOCK], dtype=tl.int32)
    w = tl.load(w_ptr + cols, mask=m, other=0.0)
    ms = tl.sum(x * x, axis=0) / N
    y = x * (1.0 / tl.sqrt(ms + eps)) * w
    tl.store(y_ptr + row * N + cols, y, mask=m & (keep != 0))


class ModelNew(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        y = torch.empty_like(x)
        T, N = x.shape
        _rms[(T,)](x, self.weight, y, N, self.eps, BLOCK=triton.next_power_of_2(N))
        return y
