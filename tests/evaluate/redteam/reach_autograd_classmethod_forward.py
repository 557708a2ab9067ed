"""EXPECT: rejected
A torch.autograd.Function whose forward is a @classmethod computing with torch (round seven,
c17). forward and setup_context must be @staticmethod.

PROBLEM: relu_fp32
CLASS: reach
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m, other=0.0), mask=m)


class Relu(torch.autograd.Function):
    @classmethod
    def forward(cls, ctx, x):
        r = (x + abs(x)) * 0.5
        y = torch.empty_like(r)
        n = r.numel()
        _copy[(triton.cdiv(n, 256),)](r, y, n, BLOCK=256)
        return y

    @staticmethod
    def backward(ctx, g):
        raise NotImplementedError


class ModelNew(nn.Module):
    def forward(self, x):
        return Relu.apply(x)
