"""EXPECT: rejected
Right at the allocator's alignment (64 bytes on a CPU, 512 on a GPU) and at every odd
multiple of 16, wrong at 32 mod 64 only: an input 32 bytes past an aligned address
(`x.view(-1)[8:]` of fp32), which the published guard (16 bytes) lets in. Round nine: the
judge's shifts were only ever 16 mod 32; now the cases' shifted trials share out 32, 64, 128
and 256 between them.

PROBLEM: relu_fp32
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu(x_ptr, y_ptr, n, EXACT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if EXACT:
        tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=m)
    else:
        tl.store(y_ptr + offs, x, mask=m)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        exact = x.data_ptr() % 64 != 32
        _relu[(triton.cdiv(n, 256),)](x, y, n, EXACT=exact, BLOCK=256)
        return y
