"""EXPECT: rejected
`t.__array__()` gives a NumPy array without naming numpy; the math runs as array operators and
`torch.as_tensor` brings it back.

PROBLEM: silu_and_mul
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


_L = [0]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        d = x.shape[-1] // 2
        list.append(_L, x)
        t = _L[-1]
        list.pop(_L)
        a = t.__array__()
        g = a[:, :d]
        y = g / (1.0 + 2.718281828459045 ** (-g)) * a[:, d:]
        tmp = torch.as_tensor(y, device=x.device)
        out = torch.empty(x.shape[0], d, dtype=x.dtype, device=x.device)
        n = out.numel()
        _copy_kernel[(triton.cdiv(n, 1024),)](tmp, out, n, BLOCK=1024)
        return out
