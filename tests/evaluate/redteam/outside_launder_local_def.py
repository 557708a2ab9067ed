"""EXPECT: rejected
Tensors laundered through the parameters of a local `def` inside forward: `gated(a, b)` returns
`a * a.sigmoid() * b`, PyTorch compute the checker takes for grid arithmetic; the kernel copies.

PROBLEM: silu_and_mul
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
        d = x.shape[-1] // 2

        def gated(a, b):
            return (a * a.sigmoid() * b).contiguous()

        answer = gated(x[..., :d], x[..., d:])
        return copy_out(answer, answer)
