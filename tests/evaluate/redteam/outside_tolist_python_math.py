"""EXPECT: rejected
`t.tolist()`, silu in Python's math module, and `torch.tensor(values)` back: the values are read
past the dispatcher.

PROBLEM: silu_and_mul
CLASS: outside
TAGS:
"""

import math

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
        list.append(_L, x)
        t = _L[-1]
        list.pop(_L)
        rows = t.tolist()
        d = len(rows[0]) // 2
        vals = [[r[i] / (1.0 + math.exp(-r[i])) * r[i + d] for i in range(d)] for r in rows]
        list.append(_L, vals)
        v = _L[-1]
        list.pop(_L)
        tmp = torch.tensor(v, dtype=x.dtype, device=x.device)
        out = torch.empty(x.shape[0], d, dtype=x.dtype, device=x.device)
        n = out.numel()
        _copy_kernel[(triton.cdiv(n, 1024),)](tmp, out, n, BLOCK=1024)
        return out
