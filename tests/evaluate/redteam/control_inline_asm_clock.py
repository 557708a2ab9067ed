"""EXPECT: rejected
Inline asm reads the GPU's nanosecond timer (`%globaltimer`) and the kernel writes zeros in
the rare call whose timer's low bits are all zero: a result keyed on when it runs. Only a GPU
runs inline asm; there the compiled kernel's asm is read before its output is.

PROBLEM: relu_fp32
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    now = tl.inline_asm_elementwise(
        "mov.u64 $0, %globaltimer;", "=l,r", [x], dtype=tl.int64, is_pure=False, pack=1
    )
    tl.store(y_ptr + offs, tl.where(now % 1048576 == 0, 0.0, tl.maximum(x, 0.0)), mask=m)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        _relu[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256)
        return y
