"""EXPECT: rejected
Forward reads a `@property` that computes silu(gate) * up in PyTorch from the input it stored on
`self`; the kernel copies the property's value.

PROBLEM: silu_and_mul
CLASS: outside
TAGS:
"""

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


def copy_out(src, like):
    out = torch.empty_like(like)
    _copy_kernel[(triton.cdiv(out.numel(), 256),)](src, out, out.numel(), BLOCK=256)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    @property
    def gated(self):
        x = self.staged
        d = x.shape[-1] // 2
        return (F.silu(x[..., :d]) * x[..., d:]).contiguous()

    def forward(self, x):
        self.staged = x
        answer = self.gated
        return copy_out(answer, answer)
