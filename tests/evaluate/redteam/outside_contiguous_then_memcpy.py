"""EXPECT: rejected
torch transposes the input with `.t().contiguous()` and a memcpy kernel copies the result into a
fresh output, so no output is itself a torch copy.

PROBLEM: transpose_copy
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        tmp = x.t().contiguous()
        out = torch.empty(x.shape[1], x.shape[0], dtype=x.dtype, device=x.device)
        n = out.numel()
        _copy_kernel[(triton.cdiv(n, 1024),)](tmp, out, n, BLOCK=1024)
        return out
