"""EXPECT: rejected
A Triton memcpy puts x, layout unchanged, into a buffer forward made; `b.t().contiguous()` of
that buffer then does the whole transpose in PyTorch, passing for a copy of forward's own
buffer.

PROBLEM: transpose_copy
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
        return b.t().contiguous()
