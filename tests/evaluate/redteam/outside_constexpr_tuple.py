"""EXPECT: rejected
The launch's tensors go to the kernel inside a `tl.constexpr` tuple; Triton's interpreter hands
the body the torch tensors, which it computes with in place while the launch has the guard
lifted.

PROBLEM: silu_and_mul
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _k(out_ptr, n, T: tl.constexpr, D: tl.constexpr):
    g = T[0][:, :D]
    u = T[0][:, D:]
    o = T[1]
    o += g / (1 + 2.718281828459045 ** (-g)) * u


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        d = x.shape[-1] // 2
        out = torch.zeros(x.shape[0], d, dtype=x.dtype, device=x.device)
        _k[(1,)](out, out.numel(), (x, out), d)
        return out
