"""EXPECT: rejected
RMSNorm with a "small batch" path for T <= 4 that loads all rows as one [4, N] tile and takes
the mean square over the whole tile (a missing `axis=1`): right for one row, wrong for 2 to 4.
The problem's cases are T = 1 and T = 5, and the published guard frees the token count up to the
largest size checked (`x.shape[0] <= 5`), so decode batches of 2, 3 and 4 (CUDA-graph capture
sizes of every serving engine) run the wrong path; no trial ever draws a size between the cases.

PROBLEM: rmsnorm_decode
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rms_row(x_ptr, w_ptr, y_ptr, N, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
    ms = tl.sum(x * x, axis=0) / N
    w = tl.load(w_ptr + cols, mask=m, other=0.0)
    tl.store(y_ptr + row * N + cols, x * (1.0 / tl.sqrt(ms + eps)) * w, mask=m)


@triton.jit
def _rms_tile(x_ptr, w_ptr, y_ptr, T, N, stride, eps, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    m = (rows[:, None] < T) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=m, other=0.0)
    ms = tl.sum(tl.sum(x * x, axis=1), axis=0) / N  # one tile: one mean (wrong past one row)
    w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)
    y = x * (1.0 / tl.sqrt(ms + eps)) * w[None, :]
    tl.store(y_ptr + rows[:, None] * N + cols[None, :], y, mask=m)


def rmsnorm(x, weight, eps):
    T, N = x.shape
    y = torch.empty((T, N), dtype=x.dtype, device=x.device)
    block = triton.next_power_of_2(N)
    if T <= 4:
        _rms_tile[(1,)](x, weight, y, T, N, x.stride(0), eps, ROWS=4, BLOCK=block)
    else:
        _rms_row[(T,)](x, weight, y, N, x.stride(0), eps, BLOCK=block)
    return y


class ModelNew(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        return rmsnorm(x, self.weight, self.eps)
