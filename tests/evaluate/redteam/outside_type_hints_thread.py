"""EXPECT: rejected
Through a string annotation evaluated by `typing.get_type_hints`, forward starts a thread that
computes F.silu, where the thread-local guard does not reach.

PROBLEM: silu_and_mul
CLASS: outside
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


def _work(x, out):
    d = x.shape[-1] // 2
    out.copy_(F.silu(x[:, :d]) * x[:, d:])


def _run(
    a: "(lambda th: (th.start(), th.join(), int)[2])(__import__('threading').Thread(target=_work, args=_L[-1]))",
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
