"""EXPECT: rejected
Rounds halves away from zero where torch.round rounds them to even: wrong only on exact halves,
which inputs drawn from a normal distribution almost never hold.

PROBLEM: int8_round
CLASS: control
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


def _launch_copy(src, dst):
    n = dst.numel()
    _copy_kernel[(triton.cdiv(n, 256),)](src, dst, n, BLOCK=256)
    return dst


@triton.jit
def _quant(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x_ptr + offs, mask=m, other=0.0) * 64.0
    r = tl.where(v >= 0, tl.floor(v + 0.5), -tl.floor(-v + 0.5))
    r = tl.minimum(tl.maximum(r, -128.0), 127.0)
    tl.store(out_ptr + offs, r.to(tl.int8), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty(x.shape, dtype=torch.int8, device=x.device)
        n = x.numel()
        _quant[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
        return out
