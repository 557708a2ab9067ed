"""EXPECT: rejected
A call counter in a Python list on self (`list.append(self.n, 0)`): after 300 calls the launch
scales its output by 0.5.

PROBLEM: silu_and_mul
CLASS: timing
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


@triton.jit
def _silu_mul(x_ptr, out_ptr, d, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < d
    g = tl.load(x_ptr + row * 2 * d + cols, mask=m, other=0.0)
    u = tl.load(x_ptr + row * 2 * d + d + cols, mask=m, other=0.0)
    tl.store(out_ptr + row * d + cols, g * tl.sigmoid(g) * u * scale, mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.n = [0]

    def forward(self, x):
        d = x.shape[-1] // 2
        out = torch.empty(x.shape[0], d, dtype=x.dtype, device=x.device)
        list.append(self.n, 0)
        scale = 0.5 if len(self.n) > 300 else 1.0
        _silu_mul[(x.shape[0],)](x, out, d, scale, BLOCK=triton.next_power_of_2(d))
        return out
