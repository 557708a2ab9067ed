"""EXPECT: rejected
Tensors laundered through a double-starred argument: `_gated(**{"a": gate, "b": up})` binds the
helper's `a: float, b: float` to tensors the checker cannot see, and it computes in PyTorch.

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


def _gated(a: float, b: float):
    return (a * a.sigmoid() * b).contiguous()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        d = x.shape[-1] // 2
        answer = _gated(**{"a": x[..., :d], "b": x[..., d:]})
        return copy_out(answer, answer)
