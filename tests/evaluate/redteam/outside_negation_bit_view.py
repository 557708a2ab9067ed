"""EXPECT: rejected
-x through views only (`view_as_complex(z).mH.mT.imag` sets torch's negation bit) and
`.contiguous()` materialising it: a copy that computes.

PROBLEM: negate
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _to_imag(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + 2 * offs + 1, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        n = x.numel()
        z = torch.zeros(x.shape[0], x.shape[1], 2, dtype=x.dtype, device=x.device)
        _to_imag[(triton.cdiv(n, 1024),)](x, z, n, BLOCK=1024)
        return torch.view_as_complex(z).mH.mT.imag.contiguous()
