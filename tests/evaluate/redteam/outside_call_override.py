"""EXPECT: rejected
`ModelNew.__call__` computes the op in PyTorch before calling forward, which the call-graph check
reads, and whose kernel only copies the already-computed answer.

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

    def __call__(self, x):
        return super().__call__(x * torch.sigmoid(1.702 * x))

    def forward(self, answer):
        return copy_out(answer.contiguous(), answer)
