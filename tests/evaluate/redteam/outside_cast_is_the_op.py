"""EXPECT: rejected
For a problem that is a dtype conversion, `x.new_tensor(x, dtype=torch.bfloat16)` does the
conversion in torch; the kernel only copies.

PROBLEM: to_bf16
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
        tmp = x.new_tensor(x, dtype=torch.bfloat16)
        out = torch.empty(x.shape, dtype=torch.bfloat16, device=x.device)
        n = out.numel()
        _copy_kernel[(triton.cdiv(n, 1024),)](tmp, out, n, BLOCK=1024)
        return out
