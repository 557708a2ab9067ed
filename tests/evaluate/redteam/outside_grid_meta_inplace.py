"""EXPECT: rejected
A grid function reads the launch's tensors from its meta argument and computes the output in
place with `+=`; the kernel does nothing.

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


@triton.jit
def _noop(out_ptr, X: tl.constexpr, OUT: tl.constexpr, D: tl.constexpr):
    pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        d = x.shape[-1] // 2
        out = torch.zeros(x.shape[0], d, dtype=x.dtype, device=x.device)

        def grid(meta):
            o = meta["OUT"]
            g = meta["X"][:, : meta["D"]]
            u = meta["X"][:, meta["D"] :]
            o += g / (1 + math.e ** (-g)) * u
            return (1,)

        _noop[grid](out, X=x, OUT=out, D=d)
        return out
