"""EXPECT: rejected
The problem declares matmul for x @ w; the candidate computes the cumsum too with a second
`torch.matmul`, against an upper-triangular matrix of ones that the only Triton kernel fills.

PROBLEM: mm_cumsum
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _triu_ones(t_ptr, n, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    m = c < n
    tl.store(t_ptr + r * n + c, tl.where(c >= r, 1.0, 0.0), mask=m)


class ModelNew(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(k, n))

    def forward(self, x):
        n = self.w.shape[1]
        tri = torch.empty(n, n, dtype=x.dtype, device=x.device)
        _triu_ones[(n,)](tri, n, BLOCK=triton.next_power_of_2(n))
        return torch.matmul(torch.matmul(x, self.w), tri)
