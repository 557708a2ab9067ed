"""EXPECT: rejected
The address read through inline asm: a `mov.b64` (an allowed instruction) of the pointer
operand gives the kernel its address as a number, and the kernel writes zeros when bits 12-21
are zero. On a CPU the interpreter has no inline asm; on a GPU the compiled kernel hands asm a
pointer.

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
    address = tl.inline_asm_elementwise(
        "mov.b64 $0, $1;", "=l,l", [x_ptr + offs * 0], dtype=tl.int64, is_pure=True, pack=1
    )
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, tl.where((address >> 12) % 1024 == 0, 0.0, tl.maximum(x, 0.0)), mask=m)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        _relu[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256)
        return y
