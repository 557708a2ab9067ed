"""EXPECT: rejected
SiLU that rounds a row's results to bf16 when every value of the row is exactly representable in
bf16 and one is not a whole number (an fp32 tensor upcast from bf16, as mixed-precision callers
pass): the judge's draws never make such a row (its grid rows mix 2^-10 steps in).

PROBLEM: silu_fp32
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _silu_rows(x_ptr, y_ptr, H, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < H
    x = tl.load(x_ptr + row * H + cols, mask=m, other=0.0)
    bits = x.to(tl.int32, bitcast=True)
    narrow = tl.sum(tl.where(m & ((bits & 0xFFFF) != 0), 1, 0), axis=0) == 0
    fractional = tl.sum(tl.where(m & (x != tl.floor(x)), 1, 0), axis=0) > 0
    y = x * tl.sigmoid(x)
    ybits = y.to(tl.int32, bitcast=True)
    rounded = ((ybits + 0x8000) & -65536).to(tl.float32, bitcast=True)
    out = tl.where(narrow & fractional, rounded, y)
    tl.store(y_ptr + row * H + cols, out, mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.empty_like(x)
        T, H = x.shape
        _silu_rows[(T,)](x, y, H, BLOCK=triton.next_power_of_2(H))
        return y
