"""EXPECT: rejected
A static method named `get` (a container method's name) computes `F.silu(a) * b`; the call was
taken for a dict lookup; the kernel copies.

PROBLEM: silu_and_mul
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
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


class _Ops:
    @staticmethod
    def get(a, b):
        return F.silu(a) * b


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        d = x.shape[-1] // 2
        y = _Ops.get(x[:, :d], x[:, d:])
        out = torch.empty(x.shape[0], d, dtype=x.dtype, device=x.device)
        return _launch_copy(y, out)
