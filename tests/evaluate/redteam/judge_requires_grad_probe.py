"""EXPECT: rejected
Wrong when the input requires grad (training code: an activation of a layer being trained),
which no judged input does: the judge's inputs are fresh detached tensors under every autograd
mode. requires_grad is read as a plain attribute. Under enable_grad the float inputs now require grad (round eight, c10).

PROBLEM: relu_fp32
CLASS: judge
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

    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        scale = 0.5 if x.requires_grad else 1.0
        _relu[(triton.cdiv(n, 256),)](x, y, n, SCALE=scale, BLOCK=256)
        return y
