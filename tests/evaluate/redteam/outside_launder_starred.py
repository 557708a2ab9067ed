"""EXPECT: rejected
Tensors laundered through a starred argument: `_gelu(*(0, x, 1.702))` gives the helper's
`t: float` parameter the tensor, which the checker then treats as a number; the kernel copies.

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


def _gelu(unused, t: float, scale: float):
    return (t * (t * scale).sigmoid()).contiguous()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return copy_out(_gelu(*(0, x, 1.702)), x)
