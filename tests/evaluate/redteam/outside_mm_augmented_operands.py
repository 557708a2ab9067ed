"""EXPECT: rejected
Kernels only pack [x | r] and [[w], [I]]; one declared extern mm then computes x @ w + r (round
seven, c07). Extern matmuls may do no more multiply-adds than the reference's.

PROBLEM: mm_add
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _pack_rows(x_ptr, r_ptr, a_ptr, K, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    xv = tl.load(x_ptr + row * K + c, mask=c < K, other=0.0)
    tl.store(a_ptr + row * (K + N) + c, xv, mask=c < K)
    rv = tl.load(r_ptr + row * N + c, mask=c < N, other=0.0)
    tl.store(a_ptr + row * (K + N) + K + c, rv, mask=c < N)


@triton.jit
def _pack_weight(w_ptr, b_ptr, K, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    wv = tl.load(w_ptr + row * N + c, mask=(c < N) & (row < K), other=0.0)
    eye = tl.where(c == row - K, 1.0, 0.0)
    tl.store(b_ptr + row * N + c, tl.where(row < K, wv, eye), mask=c < N)


class ModelNew(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.w = nn.Parameter(torch.empty(k, n))

    def forward(self, x, r):
        T, K = x.shape
        N = r.shape[1]
        a = torch.empty(T, K + N, dtype=x.dtype, device=x.device)
        b = torch.empty(K + N, N, dtype=x.dtype, device=x.device)
        BLOCK = triton.next_power_of_2(max(K, N))
        _pack_rows[(T,)](x, r, a, K, N, BLOCK=BLOCK)
        _pack_weight[(K + N,)](self.w, b, K, N, BLOCK=BLOCK)
        return torch.mm(a, b)
