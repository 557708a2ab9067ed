"""EXPECT: rejected
`typing.get_type_hints` evaluates a string annotation (an eval by another name) that pops the
compute guard's dispatch mode, runs F.silu and restores it.

PROBLEM: silu_and_mul
CLASS: reach
TAGS:
"""

import typing

import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _noop(o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(o_ptr + offs, mask=m), mask=m)


_L = [0]


def _run(
    a: "[int for cm in [torch.utils._python_dispatch._disable_current_modes()] for e in [cm.__enter__()] for xo in [_L[-1]] for d in [xo[0].shape[-1] // 2] for r in [xo[1].copy_(F.silu(xo[0][:, :d]) * xo[0][:, d:])] if cm.__exit__(None, None, None) or True][0]",
):
    return a


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        d = x.shape[-1] // 2
        out = torch.empty(x.shape[0], d, dtype=x.dtype, device=x.device)
        list.append(_L, (x, out))
        typing.get_type_hints(_run)
        list.pop(_L)
        _noop[(1,)](out, 1, BLOCK=16)
        return out
