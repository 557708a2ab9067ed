"""EXPECT: rejected
torch.trunc computed by casting a kernel-written buffer to int32 and back to float in torch.

PROBLEM: trunc_scaled
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


@triton.jit
def _scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 8.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        n = x.numel()
        y = torch.empty_like(x)
        _scale[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        yi = y.new_tensor(y, dtype=torch.int32)
        return yi.new_tensor(yi, dtype=torch.float32)
