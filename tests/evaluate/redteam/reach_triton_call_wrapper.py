"""EXPECT: rejected
In forward, `triton.runtime.build.functools.reduce(operator.call, [x], fn)` calls a module-level
PyTorch implementation that the call-graph check never follows; the kernel only copies.

PROBLEM: silu_and_mul
CLASS: reach
TAGS:
"""

import operator

import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


def _eager(x):
    d = x.shape[-1] // 2
    return (F.silu(x[..., :d]) * x[..., d:]).contiguous()


def silu_and_mul(x):
    d = x.shape[-1] // 2
    out = torch.empty(x.shape[0], d, dtype=x.dtype, device=x.device)
    answer = triton.runtime.build.functools.reduce(operator.call, [x], _eager)
    _copy_kernel[(triton.cdiv(out.numel(), 256),)](answer, out, out.numel(), BLOCK=256)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return silu_and_mul(x)
