"""EXPECT: rejected
Every ModelNew of the same hidden size shares one Parameter object, taken from a
module-level registry filled in __init__. A model with 32 RMSNorm layers loads 32 different
weights into one tensor: every layer normalises with the last layer's weight. The judge builds
one ModelNew per case and loads one state dict into it.

PROBLEM: rmsnorm_weight
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

_SHARED = {}


@triton.jit
def _rms(x_ptr, w_ptr, y_ptr, eps, D: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, D)
    x = tl.load(x_ptr + row * D + cols)
    w = tl.load(w_ptr + cols)
    r = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / D + eps)
    tl.store(y_ptr + row * D + cols, x * r * w)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        if hidden not in _SHARED:
            _SHARED[hidden] = nn.Parameter(torch.ones(hidden))
        self.weight = _SHARED[hidden]
        self.eps = eps

    def forward(self, x):
        T, D = x.shape
        y = torch.empty_like(x)
        _rms[(T,)](x, self.weight, y, self.eps, D=D)
        return y
