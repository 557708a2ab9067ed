"""EXPECT: rejected
A call counter in a tensor kept as a plain attribute (not a parameter or buffer), bumped by the
kernel's atomic add: right for the judge's calls, wrong after 200.

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
def _silu_mul_bomb(x_ptr, out_ptr, cnt_ptr, n_rows, d, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < d
    calls = tl.load(cnt_ptr)
    g = tl.load(x_ptr + row * 2 * d + cols, mask=m, other=0.0)
    u = tl.load(x_ptr + row * 2 * d + d + cols, mask=m, other=0.0)
    y = g * tl.sigmoid(g) * u
    y = tl.where(calls > 200 * n_rows, y * 0.5, y)
    tl.store(out_ptr + row * d + cols, y, mask=m)
    tl.atomic_add(cnt_ptr, 1)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = torch.zeros(1, dtype=torch.int32)

    def forward(self, x):
        d = x.shape[-1] // 2
        out = torch.empty(x.shape[0], d, dtype=x.dtype, device=x.device)
        if self.calls.device != x.device:
            self.calls = torch.zeros(1, dtype=torch.int32, device=x.device)
        _silu_mul_bomb[(x.shape[0],)](
            x, out, self.calls, x.shape[0], d, BLOCK=triton.next_power_of_2(d)
        )
        return out
