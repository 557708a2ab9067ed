"""EXPECT: rejected
Returns `x.t()`, a view of the input, for a problem whose reference returns a new contiguous
copy; the kernel does nothing.

PROBLEM: transpose_copy
CLASS: outside
TAGS:
"""

import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def _launch_copy(src, dst):
    n = dst.numel()
    _copy_kernel[(triton.cdiv(n, 256),)](src, dst, n, BLOCK=256)
    return dst


@triton.jit
def _noop(out_ptr):
    pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        _noop[(1,)](x)
        return x.t()
