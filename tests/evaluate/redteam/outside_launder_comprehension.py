"""EXPECT: rejected
Tensors laundered through comprehension elements: `[o.copy_(t * (t * 1.702).sigmoid()) for t, o
in zip(x2d, staged)]` fills the output row by row in PyTorch; the kernel only copies it.

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


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x2d = x.reshape(-1, x.shape[-1])
        staged = torch.empty_like(x2d)
        [o.copy_(t * (t * 1.702).sigmoid()) for t, o in zip(x2d, staged)]
        return copy_out(staged, x)
