"""EXPECT: rejected
"Overflow-safe" RMSNorm that first divides each row by its absolute maximum: equal to the
reference wherever a row has a nonzero entry, NaN (0/0) for an all-zero row -- padding rows,
masked tokens -- which the judge never drew before round nine (now `outliers` zeroes some rows).

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
    offs = tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(x_ptr + row * N + offs, mask=m, other=0.0)
    w = tl.load(w_ptr + offs, mask=m, other=0.0)
    a = tl.max(tl.abs(x), axis=0)
    xs = x / a
    ms = tl.sum(xs * xs, axis=0) / N
    y = xs * (1.0 / tl.sqrt(ms + eps / (a * a))) * w
    tl.store(y_ptr + row * N + offs, y, mask=m)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        y = torch.empty_like(x)
        N = x.shape[-1]
        _rms[(x.numel() // N,)](x, self.weight, y, N, self.eps, BLOCK=triton.next_power_of_2(N))
        return y
