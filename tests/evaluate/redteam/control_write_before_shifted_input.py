"""EXPECT: rejected
Right outputs, but when the input starts past the beginning of its storage
(`x.storage_offset() > 0`, as `buf[1:]` does) the kernel uses the element just before the view as
scratch, overwriting the caller's data there; the judge compares only the view.

PROBLEM: silu_fp32
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _silu(x_ptr, y_ptr, n, SCRATCH: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    y = x * tl.sigmoid(x)
    if SCRATCH:
        if pid == 0:
            tl.store(x_ptr - 1, tl.sum(y, axis=0))
    tl.store(y_ptr + offs, y, mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        scratch = x.storage_offset() > 0
        _silu[(triton.cdiv(n, 256),)](x, y, n, SCRATCH=scratch, BLOCK=256)
        return y
