"""EXPECT: rejected
A torch.library custom op named `empty` (`kbot_rt_a::empty`, named like the allocation the
compute guard lets through) computes the QuickGELU in PyTorch; the only Triton kernel copies its
result to the output.

PROBLEM: quick_gelu
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

_LIB = torch.library.Library("kbot_rt_a", "DEF")
_LIB.define("empty(Tensor x) -> Tensor")


def empty(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(1.702 * x)


_LIB.impl("empty", empty, "CPU")


@triton.jit
def _copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        h = torch.ops.kbot_rt_a.empty(x)
        y = torch.empty_like(x)
        n = x.numel()
        _copy[(triton.cdiv(n, 1024),)](h, y, n, BLOCK=1024)
        return y
