"""EXPECT: rejected
In forward itself, `triton.runtime.jit.inspect.stack(0)` (a "triton" call, allowed there) finds
the checker's frame; its `references` local is the answer, which the kernel copies out.

PROBLEM: silu_and_mul
CLASS: judge
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


def silu_and_mul(x):
    d = x.shape[-1] // 2
    out = torch.empty(x.shape[0], d, dtype=x.dtype, device=x.device)
    stolen = None
    for info in triton.runtime.jit.inspect.stack(0):
        if stolen is None and "references" in info.frame.f_locals:
            stolen = info.frame.f_locals["references"][0]
    _copy_kernel[(triton.cdiv(out.numel(), 256),)](stolen, out, out.numel(), BLOCK=256)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return silu_and_mul(x)
