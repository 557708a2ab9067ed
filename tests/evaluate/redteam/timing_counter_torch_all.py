"""EXPECT: rejected
A call counter appended to `torch.nn.modules.__all__`, a public list of a torch module the
library-state walk does not list (it sizes only the stdlib's tables and the listed modules'
`__all__`): right for the first 30 calls, half the answer after them. Every loaded torch and Triton module's `__all__` is now sized (round eight, c14).

PROBLEM: relu_fp32
CLASS: timing
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu(x_ptr, y_ptr, n, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0) * SCALE, mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.base = len(torch.nn.modules.__all__)

    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        table = torch.nn.modules.__all__
        list.append(table, "Identity")
        scale = 0.5 if len(table) - self.base > 30 else 1.0
        _relu[(triton.cdiv(n, 256),)](x, y, n, SCALE=scale, BLOCK=256)
        return y
