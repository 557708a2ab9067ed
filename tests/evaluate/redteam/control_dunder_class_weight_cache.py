"""EXPECT: rejected
Stale weights: on its first call the kernel copies the weight into a cache tensor kept in a
class attribute with a dunder name (`ModelNew.__wcache__`; the walk reads a class's table but
skips `__x__` names), and from then on normalises with the cached copy. A later
`load_state_dict` / fine-tuning step / `weight.data.mul_()` is ignored. The judge loads the
weights once, before the first call, and never changes them.

PROBLEM: rmsnorm_weight
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rms(x_ptr, w_ptr, c_ptr, f_ptr, y_ptr, eps, D: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, D)
    flag = tl.load(f_ptr)
    w_live = tl.load(w_ptr + cols)
    w_old = tl.load(c_ptr + cols)
    w = tl.where(flag != 0, w_old, w_live)
    x = tl.load(x_ptr + row * D + cols)
    r = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / D + eps)
    tl.store(y_ptr + row * D + cols, x * r * w)


@triton.jit
def _fill(w_ptr, c_ptr, f_ptr, D: tl.constexpr):
    cols = tl.arange(0, D)
    flag = tl.load(f_ptr)
    w = tl.load(w_ptr + cols)
    old = tl.load(c_ptr + cols)
    tl.store(c_ptr + cols, tl.where(flag != 0, old, w))
    tl.store(f_ptr, 1)


class ModelNew(nn.Module):
    __wcache__ = {}

    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps
        self.__wcache__["w"] = torch.zeros(hidden)
        self.__wcache__["f"] = torch.zeros(1, dtype=torch.int32)

    def forward(self, x):
        T, D = x.shape
        y = torch.empty_like(x)
        c = self.__wcache__["w"]
        f = self.__wcache__["f"]
        _rms[(T,)](x, self.weight, c, f, y, self.eps, D=D)
        _fill[(1,)](self.weight, c, f, D=D)
        return y
