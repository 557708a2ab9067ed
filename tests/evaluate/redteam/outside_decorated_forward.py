"""EXPECT: rejected
A decorator on forward computes the op in PyTorch and passes the answer in place of the input;
forward's own body, the part that is read, only launches a copy kernel.

PROBLEM: quick_gelu
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


def copy_out(src, like):
    out = torch.empty_like(like)
    _copy_kernel[(triton.cdiv(out.numel(), 256),)](src, out, out.numel(), BLOCK=256)
    return out


def _precomputed(forward):
    def wrapper(self, x):
        return forward(self, x * torch.sigmoid(1.702 * x))

    return wrapper


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    @_precomputed
    def forward(self, x):
        return copy_out(x.contiguous(), x)
