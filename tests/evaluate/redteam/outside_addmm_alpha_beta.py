"""EXPECT: rejected
The declared extern addmm given alpha/beta computes the epilogue's scale in torch; the kernel
multiplies by one (round six, c14). Extern calls with alpha/beta only as often as the reference
makes them.

PROBLEM: addmm_scale
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _epilogue(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    y = tl.load(y_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, y * 1.0, mask=m)


class ModelNew(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.w = nn.Parameter(torch.empty(k, n))
        self.b = nn.Parameter(torch.empty(n))

    def forward(self, x):
        y = torch.addmm(self.b, x, self.w, beta=0.5, alpha=0.5)
        n = y.numel()
        _epilogue[(triton.cdiv(n, 256),)](y, n, BLOCK=256)
        return y
