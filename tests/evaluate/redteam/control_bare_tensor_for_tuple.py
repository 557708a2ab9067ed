"""EXPECT: rejected
RMSNorm layer whose Model returns a 1-tuple `(y,)` (a transformers-style layer) while ModelNew
returns the bare tensor `y`. The judge flattens both with `as_outputs` (a tensor becomes a
1-tuple, a list a tuple) and compares the flat tuples, so the return structure is never
compared. A caller written for the original, `hidden = layer(hidden)[0]`, gets batch 0 of the
output instead of the whole output; broadcasting then carries it on silently
(`residual + hidden` gives every sequence of the batch the first one's values).

PROBLEM: norm_layer_tuple
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
    ms = tl.sum(x * x, axis=0) / N
    w = tl.load(w_ptr + cols, mask=m, other=0.0)
    tl.store(y_ptr + row * N + cols, x * (1.0 / tl.sqrt(ms + eps)) * w, mask=m)


def rmsnorm(x, weight, eps):
    N = x.shape[-1]
    rows = x.numel() // N
    y = torch.empty_like(x)
    _rms[(rows,)](x, weight, y, N, eps, BLOCK=triton.next_power_of_2(N))
    return y


class ModelNew(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        return rmsnorm(x, self.weight, self.eps)
