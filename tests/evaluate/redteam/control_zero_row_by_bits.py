"""EXPECT: rejected
"Overflow-safe" RMSNorm (rows divided by their absolute max first) with a zero-row fast path
that tests the row's bits (OR of the int32 views == 0) instead of its values: +0.0 padding rows
take the fast path, but a masked row holding -0.0 (what `h * mask` gives for negative h) takes
the slow path and divides 0 by 0 (NaN). The judge's zero rows are all +0.0 and it never draws
-0.0 (round nine's control_zero_row_nan closed the plain 0/0, not this one).

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
    bits = x.to(tl.int32, bitcast=True)
    any_bits = tl.reduce_or(tl.where(m, bits, 0), axis=0)
    w = tl.load(w_ptr + cols, mask=m, other=0.0)
    peak = tl.max(tl.abs(x), axis=0)
    s = x / peak
    ms = tl.sum(s * s, axis=0) / N
    y = s * (1.0 / tl.sqrt(ms + eps / (peak * peak))) * w
    y = tl.where(any_bits == 0, 0.0, y)
    tl.store(y_ptr + row * N + cols, y, mask=m)


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
