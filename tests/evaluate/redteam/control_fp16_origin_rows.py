"""EXPECT: rejected
SiLU that rounds a row's results to fp16 when the row looks like fp16 data upcast to fp32: every
value exactly representable in fp16 and at least a quarter of them using the last fp16 mantissa
bit. Round eleven made the judge draw bf16-upcast rows (control_bf16_representable_rows); fp16
models (T5, older fp16 checkpoints, fp16 serving upcast to fp32 for a norm) pass fp16-upcast
rows, which neither the grid nor the bf16 rows resemble.

PROBLEM: silu_rows16
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
    expo = ((bits >> 23) & 255) - 127
    # exactly an fp16 value: at most 11 significant bits, exponent in fp16's normal range
    as16 = ((bits & 0x1FFF) == 0) & (((expo >= -14) & (expo <= 15)) | (x == 0.0))
    exact = tl.sum(tl.where(m & (as16 == 0), 1, 0), axis=0) == 0
    lowbit = tl.sum(tl.where(m & (((bits >> 13) & 1) != 0), 1, 0), axis=0)
    fp16_like = exact & (lowbit * 4 >= H)
    y = x * tl.sigmoid(x)
    yb = y.to(tl.int32, bitcast=True)
    y16 = ((yb + 0x0FFF + ((yb >> 13) & 1)) & -8192).to(tl.float32, bitcast=True)
    out = tl.where(fp16_like, y16, y)
    tl.store(y_ptr + row * H + cols, out, mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.empty_like(x)
        T, H = x.shape
        _silu_rows[(T,)](x, y, H, BLOCK=triton.next_power_of_2(H))
        return y
