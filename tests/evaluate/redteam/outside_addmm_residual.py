"""EXPECT: rejected
With matmul declared extern, `torch.addmm(r, x, w)` adds the residual inside the GEMM call:
the epilogue done by torch (round five, c10).

PROBLEM: mm_residual
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=m), mask=m)


class ModelNew(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.w = nn.Parameter(torch.empty(k, n))

    def forward(self, x, r):
        h = torch.addmm(r, x, self.w)
        y = torch.empty_like(h)
        _copy[(triton.cdiv(h.numel(), 256),)](h, y, h.numel(), BLOCK=256)
        return y
