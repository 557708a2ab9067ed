"""EXPECT: rejected
Right only in eval mode, the mode the judge runs ModelNew in: halves the output when
self.training (round seven, c08). Reading the train/eval mode in forward is refused.

PROBLEM: relu_fp32
CLASS: reach
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0) * scale, mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        scale = 0.5 if self.training else 1.0
        _relu[(triton.cdiv(n, 256),)](x, y, n, scale, BLOCK=256)
        return y
