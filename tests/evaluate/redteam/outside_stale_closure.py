"""EXPECT: rejected
A local def made before the tensors exist is passed to a module-level helper that calls it: the
checks judged the closure as it was when defined; the kernel copies.

PROBLEM: silu_and_mul
CLASS: outside
TAGS:
"""

import math

import torch
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


def _apply(fn):
    return fn()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        d = x.shape[-1] // 2

        def work():
            return g / (1 + math.e ** (-g)) * u

        g = x[:, :d]
        u = x[:, d:]
        y = _apply(work)
        out = torch.empty(x.shape[0], d, dtype=x.dtype, device=x.device)
        return _launch_copy(y, out)
