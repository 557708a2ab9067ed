"""EXPECT: rejected
SiLU-and-mul with a separate bf16 kernel that steps from row to row by 2 * BLOCK (the row's
width rounded up to a power of two) instead of 2 * D: right whenever D is a power of two. The
cases check fp32 at D = 48 and bf16 at D = 64, and the published guard frees dtype and width
independently (`x.dtype in (torch.float32, torch.bfloat16)`, `x.shape[1] <= 128`), so bf16 at
D = 48 (or any width below 128 that is not a power of two) takes the kernel; no trial ever ran
that combination. A bf16 model with such a width gets rows read from the wrong place.

PROBLEM: silu_and_mul
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _silu_mul_f32(x_ptr, y_ptr, D, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < D
    g = tl.load(x_ptr + row * 2 * D + cols, mask=m, other=0.0)
    u = tl.load(x_ptr + row * 2 * D + D + cols, mask=m, other=0.0)
    tl.store(y_ptr + row * D + cols, g * tl.sigmoid(g) * u, mask=m)


@triton.jit
def _silu_mul_bf16(x_ptr, y_ptr, D, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < D
    src = x_ptr + row * 2 * BLOCK  # the row pitch taken from the block, not from D
    g = tl.load(src + cols, mask=m, other=0.0).to(tl.float32)
    u = tl.load(src + D + cols, mask=m, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * D + cols, (g * tl.sigmoid(g) * u).to(tl.bfloat16), mask=m)


def silu_and_mul(x):
    T, W = x.shape
    D = W // 2
    y = torch.empty((T, D), dtype=x.dtype, device=x.device)
    block = triton.next_power_of_2(D)
    if x.dtype == torch.bfloat16:
        _silu_mul_bf16[(T,)](x, y, D, BLOCK=block)
    else:
        _silu_mul_f32[(T,)](x, y, D, BLOCK=block)
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return silu_and_mul(x)
