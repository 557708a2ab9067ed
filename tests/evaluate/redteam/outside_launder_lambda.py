"""EXPECT: rejected
Tensors laundered into "numbers" through lambda parameters: `gelu = lambda t: t * sig(t * 1.702)`
with `sig = lambda u: u.sigmoid()` computes the op in PyTorch inside forward; the kernel copies.

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
        sig = lambda u: u.sigmoid()  # noqa: E731
        gelu = lambda t: (t * sig(t * 1.702)).contiguous()  # noqa: E731
        return copy_out(gelu(x), x)
