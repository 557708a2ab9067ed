"""EXPECT: rejected
A stable sort answered with ties in reverse order (round seven, c06). A stable sort's order is
compared exactly.

PROBLEM: sort_stable
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rank_sort(x_ptr, v_ptr, i_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    a = tl.arange(0, BLOCK)
    xi = tl.load(x_ptr + row * stride + a, mask=a < N, other=float("inf"))
    xj = tl.load(x_ptr + row * stride + a, mask=a < N, other=float("inf"))
    less = xj[None, :] < xi[:, None]
    tie_after = (xj[None, :] == xi[:, None]) & (a[None, :] > a[:, None])
    rank = tl.sum((less | tie_after).to(tl.int32), axis=1)
    tl.store(v_ptr + row * N + rank, xi, mask=a < N)
    tl.store(i_ptr + row * N + rank, a.to(tl.int64), mask=a < N)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        T, N = x.shape
        v = torch.empty_like(x)
        i = torch.empty(T, N, dtype=torch.int64, device=x.device)
        _rank_sort[(T,)](x, v, i, N, x.stride(0), BLOCK=triton.next_power_of_2(N))
        return v, i
