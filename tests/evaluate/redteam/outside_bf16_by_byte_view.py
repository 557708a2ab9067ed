"""EXPECT: rejected
The fp32 -> bf16 cast by reinterpretation only: a Triton memcpy into a fresh fp32 buffer, then
`b.view(int16)[:, 1::2].view(bfloat16)` keeps the high half of each float (truncation, within
one ulp of rounding); no copy and no cast op, only views.

PROBLEM: to_bf16
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=m), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        b = torch.empty_like(x)
        n = x.numel()
        _copy[(triton.cdiv(n, 256),)](x, b, n, BLOCK=256)
        return b.view(torch.int16)[:, 1::2].view(torch.bfloat16)
