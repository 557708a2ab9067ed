"""EXPECT: rejected
One-pass variance E[x^2] - E[x]^2 in fp32: exact enough for inputs drawn around zero (round nine:
every distribution was a scaling or an edit of randn; `outliers` now moves some rows off
centre), but catastrophic cancellation for rows with a large mean (pixels 0..255, offset embeddings):
a row of 1000 + randn gets a variance error of order 1 (or a negative variance, NaN).

PROBLEM: layernorm_rows
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _ln(x_ptr, y_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(x_ptr + row * N + offs, mask=m, other=0.0)
    s1 = tl.sum(x, axis=0) / N
    s2 = tl.sum(x * x, axis=0) / N
    var = s2 - s1 * s1
    y = (x - s1) * (1.0 / tl.sqrt(var + eps))
    tl.store(y_ptr + row * N + offs, y, mask=m)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        N = x.shape[-1]
        _ln[(x.numel() // N,)](x, y, N, 1e-5, BLOCK=triton.next_power_of_2(N))
        return y
